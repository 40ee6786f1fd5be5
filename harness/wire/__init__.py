"""What crosses between processes: the only types the judge, the candidate process and the parent share.

``conn`` (length-prefixed JSON messages and file descriptors over a socket), ``messages`` (the pydantic shapes every
message is held to), ``shm`` and ``device_buffer`` (the trial hand-over buffers, in host or device memory), ``sealed`` (an output's
hand-over in a file sealed before its report) and
``job`` (the ``JobSpec``/``EvalSettings`` the parent sends each process). Imports only ``harness.measure``.
"""
