"""What the project's Python scripts share: the repository root, the workspace version, the
cargo target folder, and saying, stopping and running commands under the script's name.

    import project
    project.NAME = "wheel"      # the prefix of every line said
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = "script"


def say(msg):
    print(f"{NAME}: {msg}", file=sys.stderr, flush=True)


def die(msg):
    say(f"error: {msg}")
    sys.exit(1)


def run(cmd, **kw):
    """Run `cmd`, its stdout; on failure stop, with what it printed."""
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if r.returncode != 0:
        die(f"{shlex.join(str(c) for c in cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def version():
    """The workspace version (Cargo.toml's [workspace.package])."""
    text = (ROOT / "Cargo.toml").read_text()
    m = re.search(r'\[workspace\.package\][^\[]*?^version = "([^"]+)"', text, re.M | re.S)
    if not m:
        die("no version in Cargo.toml's [workspace.package]")
    return m.group(1)


def target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "aether-target"))
