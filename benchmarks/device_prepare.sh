#!/usr/bin/env bash
# Source this on a lent GPU machine (no package registry there) before any benchmark:
#   . benchmarks/device_prepare.sh
# It unpacks the Debian packages carried in .deb/ (bubblewrap, libseccomp: the sandbox's tools, harness.sandbox) and
# installs the wheels carried in .whl/ (pydantic and what it needs) into KV_SITE, then puts both on the paths.
# KV_SITE (default /opt/kv-site) lies outside /tmp on purpose: a benchmark's own /tmp folders come and go, and the
# site must stay readable by the sandbox's dropped uid, which every candidate process runs as.
# Fetch them here first: apt-get download bubblewrap libseccomp2 (into .deb/); pip download pydantic pydantic-core
# typing-extensions annotated-types typing-inspection tenacity --no-deps --python-version 3.12 --only-binary=:all:
# (into .whl/). Both folders are git-ignored and carried with `run`.
KV_SITE=${KV_SITE:-/opt/kv-site}
if [ -d .deb ] && ! command -v bwrap >/dev/null 2>&1; then
    for f in .deb/*.deb; do dpkg -x "$f" /opt/kv-deb; done
    export PATH=/opt/kv-deb/usr/bin:$PATH LD_LIBRARY_PATH=/opt/kv-deb/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ -d .whl ] && ! python3 -c "import pydantic" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$KV_SITE" .whl/*.whl
    chmod -R a+rX "$KV_SITE"
    export PYTHONPATH=$KV_SITE${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -c "import pydantic, torch; print('prepared: pydantic', pydantic.VERSION, 'torch', torch.__version__)"
command -v bwrap
