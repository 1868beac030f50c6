"""What a Mach-O file (macOS executable or dylib, thin or universal) links and needs, read from its
load commands with nothing but Python (no otool): the libraries it loads, its run paths, the
lowest macOS it runs on, its architectures. scripts/wheel takes the macOS wheel's platform tag and
its check that every library is carried or the system's from here.

    python3 scripts/lib/macho.py FILE...    prints each file's facts as JSON, one line per file
"""
import json
import re
import struct
import sys

FAT_MAGIC = 0xCAFEBABE
FAT_MAGIC_64 = 0xCAFEBABF
MH_MAGIC_64 = 0xFEEDFACF
MH_MAGIC = 0xFEEDFACE
CPU = {0x01000007: "x86_64", 0x0100000C: "arm64", 0x7: "i386", 0xC: "arm"}
LC_REQ_DYLD = 0x80000000
# the commands naming a library the loader opens (dylib_command: its name at an offset)
LOADS = {0xC, 0x18 | LC_REQ_DYLD, 0x1F | LC_REQ_DYLD, 0x20, 0x23 | LC_REQ_DYLD}
LC_ID_DYLIB = 0xD
LC_RPATH = 0x1C | LC_REQ_DYLD
LC_VERSION_MIN_MACOSX = 0x24
LC_BUILD_VERSION = 0x32
PLATFORM_MACOS = 1
# what a macOS wheel may load from the system without carrying it: the OS's own libraries and
# frameworks (libSystem, libc++, libresolv, libiconv, libz, libobjc, the frameworks)
SYSTEM = re.compile(r"^(/usr/lib/(libSystem|libc\+\+|libc\+\+abi|libresolv|libiconv|libz|libobjc)(\.\w+)*\.dylib"
                    r"|/System/Library/Frameworks/.+)$")


class NotMachO(ValueError):
    pass


def _cstr(buf, start, end):
    raw = buf[start:end]
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _version(v):
    """xxxx.yy.zz nibbles of a Mach-O version word as (major, minor, patch)."""
    return (v >> 16, (v >> 8) & 0xFF, v & 0xFF)


def _thin(data, base, name):
    if len(data) < base + 32:
        raise NotMachO(f"{name}: too short for a Mach-O header")
    magic = struct.unpack_from("<I", data, base)[0]
    if magic not in (MH_MAGIC_64, MH_MAGIC):
        raise NotMachO(f"{name}: not a Mach-O file (magic {magic:#x} at offset {base})")
    cputype, _, filetype, ncmds, sizeofcmds = struct.unpack_from("<iiIII", data, base + 4)
    off = base + (32 if magic == MH_MAGIC_64 else 28)
    end = off + sizeofcmds
    if len(data) < end:
        raise NotMachO(f"{name}: the load commands run past the end of the file")
    facts = {"arch": CPU.get(cputype & 0xFFFFFFFF, hex(cputype)), "filetype": filetype,
             "needed": [], "rpaths": [], "id": None, "minos": None}
    for _ in range(ncmds):
        if off + 8 > end:
            raise NotMachO(f"{name}: a load command runs past the commands' size")
        cmd, size = struct.unpack_from("<II", data, off)
        if size < 8 or off + size > end:
            raise NotMachO(f"{name}: a load command of {size} bytes at offset {off} is out of bounds")
        if cmd in LOADS or cmd == LC_ID_DYLIB or cmd == LC_RPATH:
            (at,) = struct.unpack_from("<I", data, off + 8)
            text = _cstr(data, off + at, off + size)
            if cmd == LC_RPATH:
                facts["rpaths"].append(text)
            elif cmd == LC_ID_DYLIB:
                facts["id"] = text
            else:
                facts["needed"].append(text)
        elif cmd == LC_BUILD_VERSION:
            platform, minos = struct.unpack_from("<II", data, off + 8)
            if platform == PLATFORM_MACOS:
                facts["minos"] = _version(minos)
        elif cmd == LC_VERSION_MIN_MACOSX and facts["minos"] is None:
            (v,) = struct.unpack_from("<I", data, off + 8)
            facts["minos"] = _version(v)
        off += size
    return facts


def read(path):
    """The facts of each architecture in the file (a universal file has several)."""
    data = open(path, "rb").read()
    name = str(path)
    if len(data) < 8:
        raise NotMachO(f"{name}: too short for a Mach-O header")
    magic, n = struct.unpack_from(">II", data, 0)
    if magic in (FAT_MAGIC, FAT_MAGIC_64):
        out, entry = [], 20 if magic == FAT_MAGIC else 32
        for i in range(n):
            at = 8 + i * entry
            if magic == FAT_MAGIC:
                offset = struct.unpack_from(">I", data, at + 8)[0]
            else:
                offset = struct.unpack_from(">Q", data, at + 8)[0]
            out.append(_thin(data, offset, name))
        return out
    return [_thin(data, 0, name)]


def dyld_loads(text):
    """The paths of the images dyld says it loaded (DYLD_PRINT_LIBRARIES on stderr): lines
    `dyld[PID]: <UUID> /path` (macOS 13 and later) or `dyld[PID]: /path`."""
    out = []
    for line in text.splitlines():
        m = re.match(r"dyld(?:\[\d+\])?: (?:<[^>]*> )?(/.*)$", line.strip())
        if m:
            out.append(m.group(1))
    return out


def wheel_tag(files):
    """(macosx_<major>_<minor>_<arch>, [libraries neither carried nor the system's]) for the
    Mach-O files a wheel carries: the highest minimum macOS any of them needs (11 and later tag as
    <major>_0; 10.9 where none says), arm64, x86_64 or universal2 where every file has both. A
    library is carried when a file of that name is in the wheel, whatever path (@rpath/…) names
    it."""
    carried = {str(f).rsplit("/", 1)[-1] for f in files}
    minos, arches, outside = (10, 9, 0), None, []
    for f in files:
        slices = read(f)
        have = {s["arch"] for s in slices}
        arches = have if arches is None else arches & have
        for s in slices:
            if s["minos"]:
                minos = max(minos, s["minos"])
            for lib in s["needed"]:
                base = lib.rsplit("/", 1)[-1]
                if base in carried and (lib.startswith("@") or lib == s["id"]):
                    continue
                if SYSTEM.match(lib):
                    continue
                outside.append(f"{lib} (needed by {str(f).rsplit('/', 1)[-1]})")
    if not arches:
        raise NotMachO("the files share no architecture")
    arch = "universal2" if {"arm64", "x86_64"} <= arches else sorted(arches)[0]
    version = f"{minos[0]}_0" if minos[0] >= 11 else f"{minos[0]}_{minos[1]}"
    return f"macosx_{version}_{arch}", sorted(set(outside))


if __name__ == "__main__":
    status = 0
    for p in sys.argv[1:]:
        try:
            print(json.dumps({"file": p, "slices": read(p)}))
        except (OSError, NotMachO) as e:
            print(f"macho: {e}", file=sys.stderr)
            status = 1
    sys.exit(status)
