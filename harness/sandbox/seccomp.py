"""The seccomp filter every sandboxed process runs under, compiled with libseccomp and handed to ``bwrap --seccomp``.

bubblewrap loads it after it has made the namespaces and mounts, so the setup itself is not filtered; everything the
candidate runs afterwards is. Denied with EPERM: reading or writing other processes (ptrace, process_vm_*), changing
the mount table or entering or making namespaces (mount, umount2, pivot_root, unshare, setns, and clone with any
namespace flag), and kernel interfaces a kernel benchmark has no use for and that have a record of privilege bugs
(perf_event_open, bpf, keyctl and friends, userfaultfd, io_uring, module and kexec loading). clone3 answers ENOSYS so
that glibc falls back to clone, whose flags the filter can read.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree", "fsopen", "fsmount",
    "fsconfig", "fspick", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    "perf_event_open", "bpf", "keyctl", "add_key", "request_key", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "settimeofday", "clock_settime", "adjtimex",
)
# Every CLONE_NEW* flag: a thread or a fork is fine, a new namespace is not.
CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


class SeccompUnavailable(RuntimeError):
    """libseccomp is missing or refused the filter."""


@functools.lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise SeccompUnavailable(f"libseccomp not found ({exc})") from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


@functools.lru_cache(maxsize=1)
def filter_bytes() -> bytes:
    """The compiled BPF program (the same for every sandbox of this process)."""
    lib = _lib()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        deny = _act_errno(errno.EPERM)
        for name in DENIED:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                continue  # not a syscall on this architecture
            if lib.seccomp_rule_add(ctx, deny, nr, 0) != 0:
                raise SeccompUnavailable(f"seccomp_rule_add({name}) failed")
        nr = lib.seccomp_syscall_resolve_name(b"clone")
        cmp = (_ArgCmp * 1)()
        for bit in (1 << i for i in range(32) if CLONE_NEW_ANY & (1 << i)):  # clone with any namespace flag set
            cmp[0] = _ArgCmp(0, SCMP_CMP_MASKED_EQ, bit, bit)
            if lib.seccomp_rule_add_array(ctx, deny, nr, 1, cmp) != 0:
                raise SeccompUnavailable("seccomp_rule_add(clone) failed")
        nr3 = lib.seccomp_syscall_resolve_name(b"clone3")
        if nr3 >= 0 and lib.seccomp_rule_add(ctx, _act_errno(errno.ENOSYS), nr3, 0) != 0:
            raise SeccompUnavailable("seccomp_rule_add(clone3) failed")
        r, w = os.pipe()
        try:
            if lib.seccomp_export_bpf(ctx, w) != 0:
                raise SeccompUnavailable("seccomp_export_bpf failed")
            os.close(w)
            w = -1
            chunks = []
            while chunk := os.read(r, 65536):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
    finally:
        lib.seccomp_release(ctx)


def filter_fd() -> int:
    """A fresh readable descriptor holding the filter, for ``bwrap --seccomp FD`` (bubblewrap reads it to the end)."""
    fd = os.memfd_create("kv-seccomp", 0)
    data = filter_bytes()
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
