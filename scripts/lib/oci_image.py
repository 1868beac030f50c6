#!/usr/bin/env python3
"""Build aether's container image without a container engine, and run it.

    scripts/image --oci LAYOUT [--binary PATH] [--run]

The Dockerfile's runtime stage (everything after its last FROM) is carried out step by step:

  FROM debian:SUITE[-slim]   mmdebstrap --variant=minbase SUITE from Debian's mirror (the -slim
                             image's dpkg exclusions: no docs but copyrights, no man pages, no
                             locales), the same packages the Docker Hub image is made of
  RUN CMD                    /bin/sh -c CMD in the root file system (chroot), with the ENV so far
  COPY --from=build SRC DST  SRC is /opt/aether, which `scripts/image --files` lays out from
                             --binary (the build stage's last command), copied to DST
  ENV / USER / WORKDIR / CMD the image configuration

The root file system becomes one layer of an OCI image in LAYOUT (umoci), tagged VERSION (the
workspace version: `aether fleet manifests`' default --image is aether:VERSION) and latest.
Any other instruction in the runtime stage stops the build, naming it: the Dockerfile stays the
one description of the image.

--run unpacks the image into an OCI bundle and runs it with runc (namespaces, the image's user,
environment and working directory): `aether --version`, then `aether qualify` of the bundled sample
(mounted read-only), whose CSV must equal the same binary's answer outside the container (all but
the history's row ids). Needs root (chroot, runc), and the Debian packages mmdebstrap, umoci, runc.
"""

import argparse
import csv as csv_module
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import project  # noqa: E402
from project import ROOT, die, run, say, target_dir, version  # noqa: E402

project.NAME = "image"
MIRROR = os.environ.get("AETHER_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# the PATH of Debian's images (docker.io/library/debian), which ENV PATH=...:$PATH extends
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# what debian:*-slim leaves out (its /etc/dpkg/dpkg.cfg.d/docker)
SLIM_DPKG = [
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/groff/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/lintian/*",
    "path-exclude=/usr/share/linda/*",
]
SAMPLE_APPS = 7
MERGED_USR = "/usr/share/mmdebstrap/hooks/maybe-merged-usr"





def instructions(dockerfile):
    """The Dockerfile as (line number, INSTRUCTION, argument) with continuation lines joined and
    comments left out."""
    out, buf, start = [], "", 0
    for n, line in enumerate(dockerfile.read_text().splitlines(), 1):
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if buf and s.startswith("#"):
            continue
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        word, _, arg = buf.partition(" ")
        out.append((start, word.upper(), arg.strip()))
        buf = ""
    if buf:
        die(f"{dockerfile}: line {start}: the instruction never ends (a trailing backslash)")
    return out


class Stage:
    """The runtime stage: its base, the steps that make its file system, its configuration."""

    def __init__(self, dockerfile):
        steps = instructions(dockerfile)
        froms = [i for i, (_, w, _) in enumerate(steps) if w == "FROM"]
        if not froms:
            die(f"{dockerfile}: no FROM")
        n, _, base = steps[froms[-1]]
        m = re.fullmatch(r"(?:docker\.io/)?(?:library/)?debian:([a-z]+)(-slim)?", base.split(" AS ")[0].strip())
        if not m:
            die(f"{dockerfile}: line {n}: FROM {base}: only debian:SUITE[-slim] can be built without an engine")
        self.suite, self.slim = m.group(1), bool(m.group(2))
        self.base = base
        self.env = {"PATH": BASE_PATH}
        self.user, self.workdir, self.cmd = None, "/", None
        # ("RUN", command, the ENV so far) and ("COPY", destination, None), in the file's order
        self.steps = []
        for n, word, arg in steps[froms[-1] + 1 :]:
            where = f"{dockerfile}: line {n}: {word}"
            if word == "RUN":
                if self.user or self.workdir != "/":
                    die(f"{where} after USER or WORKDIR is not supported here")
                if arg.startswith("["):
                    die(f"{where}: the exec form is not supported here; use the shell form")
                self.steps.append(("RUN", arg, dict(self.env)))
            elif word == "COPY":
                parts = arg.split()
                if len(parts) != 3 or parts[0] != "--from=build" or parts[1] != "/opt/aether":
                    die(f"{where} {arg}: only COPY --from=build /opt/aether DST (the --files layout) is supported")
                self.steps.append(("COPY", parts[2], None))
            elif word == "ENV":
                for k, v in env_pairs(arg, where):
                    self.env[k] = re.sub(r"\$\{?(\w+)\}?", lambda m: self.env.get(m.group(1), ""), v)
            elif word == "USER":
                self.user = arg
            elif word == "WORKDIR":
                self.workdir = arg
            elif word == "CMD":
                try:
                    self.cmd = json.loads(arg)
                except json.JSONDecodeError:
                    die(f"{where} {arg}: only the exec form (a JSON list) is supported")
            else:
                die(f"{where}: not supported without a container engine")
        if not any(kind == "COPY" for kind, _, _ in self.steps):
            die(f"{dockerfile}: the runtime stage copies no /opt/aether from the build stage")


def env_pairs(arg, where):
    pairs = []
    for tok in shlex.split(arg):
        k, eq, v = tok.partition("=")
        if not eq:
            die(f"{where} {arg}: only ENV KEY=VALUE is supported")
        pairs.append((k, v))
    return pairs



def need(*tools):
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        die(f"{', '.join(missing)} not on PATH: apt-get install {' '.join(missing)} (Debian packages)")
    if os.geteuid() != 0:
        die("building the image without an engine runs chroot and runc: run as root")


def rootfs(stage, files, tmp):
    """The image's root file system (a directory), made by mmdebstrap and the stage's steps."""
    target = tmp / "rootfs"
    # /usr merged by mmdebstrap's hook, as Debian's images are, not by the usrmerge package (which
    # would pull in perl: +50 MB)
    cmd = ["mmdebstrap", "--variant=minbase", "--mode=root", "--quiet", f"--hook-dir={MERGED_USR}"]
    if stage.slim:
        cmd += [f"--dpkgopt={o}" for o in SLIM_DPKG]
    # each hook is a shell command run with $1 = the root file system
    for kind, what, env in stage.steps:
        if kind == "COPY":
            dst = shlex.quote(what)
            hook = f'mkdir -p "$1"{dst} && cp -a {shlex.quote(str(files))}/. "$1"{dst}'
        else:
            words = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), "/bin/sh", "-c", what]
            hook = 'chroot "$1" ' + shlex.join(words)
        cmd.append(f"--customize-hook={hook}")
    # what apt leaves behind that no image keeps
    cmd.append('--customize-hook=rm -rf "$1"/var/cache/apt/*.bin "$1"/var/lib/apt/lists/*')
    cmd += [stage.suite, str(target), MIRROR]
    t0 = time.monotonic()
    run(cmd)
    say(f"root file system of {stage.base} + the stage's steps from {MIRROR} in {time.monotonic() - t0:.0f} s")
    return target


def build(layout, files):
    dockerfile = ROOT / "Dockerfile"
    stage = Stage(dockerfile)
    need("mmdebstrap", "umoci")
    ver = version()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aether-oci-") as t:
        tmp = Path(t)
        fs = rootfs(stage, files, tmp)
        if layout.exists():
            shutil.rmtree(layout)
        run(["umoci", "init", "--layout", str(layout)])
        image = f"{layout}:{ver}"
        run(["umoci", "new", "--image", image])
        run(["umoci", "insert", "--image", image, "--history.created_by", f"{stage.base} + the Dockerfile's runtime stage", str(fs), "/"])
        size_fs = du(fs)
    cfg = ["umoci", "config", "--image", image, "--os", "linux", "--architecture", arch()]
    cfg += [f"--config.env={k}={v}" for k, v in stage.env.items()]
    if stage.user:
        cfg.append(f"--config.user={stage.user}")
    cfg.append(f"--config.workingdir={stage.workdir}")
    for word in stage.cmd or []:
        cfg.append(f"--config.cmd={word}")
    cfg += [f"--config.label=org.opencontainers.image.version={ver}", "--config.label=org.opencontainers.image.title=aether"]
    run(cfg)
    run(["umoci", "tag", "--image", image, "latest"])
    run(["umoci", "gc", "--layout", str(layout)])
    packed = du(layout / "blobs")
    say(
        f"built aether:{ver} (and latest) in {layout} in {time.monotonic() - t0:.0f} s: "
        f"{packed / 1e6:.0f} MB compressed, {size_fs / 1e6:.0f} MB unpacked"
    )
    return ver


def arch():
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


def du(path):
    return sum(p.lstat().st_size for p in Path(path).rglob("*") if p.is_file() and not p.is_symlink())


def run_image(layout, ver, files):
    """Unpack the image into a bundle and run it with runc: --version, then the sample qualified,
    whose CSV must equal the same binary's outside the container (all but the history's ids)."""
    need("umoci", "runc")
    with tempfile.TemporaryDirectory(prefix="aether-oci-run-") as t:
        tmp = Path(t)
        bundle = tmp / "bundle"
        run(["umoci", "unpack", "--image", f"{layout}:{ver}", str(bundle)])
        config = json.loads((bundle / "config.json").read_text())
        proc = config["process"]
        uid = proc["user"]["uid"]
        if uid == 0:
            die("the image runs as root: the Dockerfile's USER is missing")
        sample = ROOT / "datasets" / "sample"
        config.setdefault("mounts", []).append(
            {"destination": "/sample", "type": "bind", "source": str(sample), "options": ["rbind", "ro"]}
        )

        def inside(args):
            proc["terminal"] = False
            proc["args"] = args
            (bundle / "config.json").write_text(json.dumps(config, indent=1))
            name = f"aether-check-{os.getpid()}-{time.monotonic_ns()}"
            r = subprocess.run(["runc", "run", "--bundle", str(bundle), name], text=True, capture_output=True)
            subprocess.run(["runc", "delete", "--force", name], capture_output=True)
            if r.returncode != 0:
                die(f"runc run {shlex.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
            return r.stdout

        got = inside(["aether", "--version"]).strip()
        want = f"aether {ver}"
        if got != want:
            die(f"aether --version in the image said {got!r}, not {want!r}")
        say(f"in the image (runc, uid {uid}, cwd {proc['cwd']}): aether --version: {got}")
        t0 = time.monotonic()
        csv = inside(["aether", "qualify", "--event_log", "/sample", "--format", "csv"])
        took = time.monotonic() - t0
        rows = [l for l in csv.splitlines()[1:] if l.strip()]
        if len(rows) != SAMPLE_APPS:
            die(f"qualify of the sample in the image gave {len(rows)} rows, not the sample's {SAMPLE_APPS} apps:\n{csv}")
        # the same files outside, with a new home: the same answers (all but the history ids)
        home = tmp / "home"
        home.mkdir()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
        outside = run([str(files / "bin" / "aether"), "qualify", "--event_log", str(sample), "--format", "csv"], env=env, cwd=home)
        if judged(outside) != judged(csv):
            die(f"qualify of the sample differs inside the image:\n--- inside\n{csv}\n--- outside\n{outside}")
        say(f"in the image: aether qualify --event_log <sample>: {len(rows)} apps in {took:.1f} s, the same answers as outside")


def judged(text):
    """qualify's CSV without the history's ids (the first three columns: row ids, numbered in the
    order the apps finish, which a parallel run does not fix)."""
    rows = list(csv_module.reader(io.StringIO(text)))
    if not rows or rows[0][:3] != ["Aether Job ID", "Aether Shape ID", "Aether Config ID"]:
        die(f"qualify's CSV does not start with the history's ids:\n{text}")
    return [r[3:] for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oci", type=Path, required=True, help="the OCI image layout to write")
    ap.add_argument("--binary", type=Path, help="the aether binary (default: the release build)")
    ap.add_argument("--run", action="store_true", help="run the built image with runc")
    a = ap.parse_args()
    binary = (a.binary or target_dir() / "release" / "aether").resolve()
    if not binary.is_file():
        die(f"{binary}: no such binary (cargo build --release -p aether, or --binary PATH)")
    layout = a.oci.resolve()
    # the build stage's layout: the image's /opt/aether, and what --run compares it with outside
    with tempfile.TemporaryDirectory(prefix="aether-oci-files-") as t:
        files = Path(t) / "opt-aether"
        subprocess.run([str(ROOT / "scripts" / "image"), "--files", str(files), "--binary", str(binary)], check=True)
        ver = build(layout, files)
        if a.run:
            run_image(layout, ver, files)


if __name__ == "__main__":
    main()
