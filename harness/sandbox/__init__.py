"""Where untrusted code runs: bubblewrap namespaces, a seccomp filter, a cgroup, an unprivileged uid.

    policy   what a sandboxed process sees and may write, as a bwrap command line
    seccomp  the system calls it may not make
    cgroup   its tree's memory and process limits
    launch   starting, waiting for and killing children, sandboxed or not
    untrusted  reading a file in a folder candidate code could write
"""

from . import disk
from .launch import (
    Child,
    ChildResult,
    default_memory_limit,
    kill_group,
    run_module,
    sandbox_setup_failed,
    spawn_module,
    tail,
    tree_rss,
    wait_child,
)
from .policy import EXT_MOUNT, UID_BASE, UID_COUNT, Policy, SandboxUnavailable, own, tools
from .untrusted import read_bounded

__all__ = ["disk", "EXT_MOUNT", "UID_BASE", "UID_COUNT", "Child", "ChildResult", "Policy", "SandboxUnavailable",
           "default_memory_limit", "kill_group", "own", "read_bounded", "run_module", "sandbox_setup_failed", "spawn_module", "tail", "tools", "tree_rss",
           "wait_child"]
