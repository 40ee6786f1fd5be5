"""Builds, where candidate code runs: ``build`` (``python -m harness.build.build SOURCE.py``, the sandboxed process
that imports a candidate so its extensions compile, and the precompiled-header maker) and ``compile_launcher`` (the
script torch's compilers run through for the build caches). Imports only ``harness.candidate.load`` and
``harness.measure``; the trusted cache filing around a build (which folder it gets, the PCHs made afterwards in a
sandbox of their own) is the parent's, in ``harness.builder``.
"""
