# The child's filesystem: a private /tmp, every other mount read-only, the build caches bound back.
import ctypes
import errno
import os

from . import state

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
# The world-writable places of a usual Linux host (src/sandbox/fs_lockdown.cpp world_writable_dirs).
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# The module build caches a gate child loads from (set by serve, from the environment).
BUILD_DIR_VARS = ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
_MOUNT_OPTION_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                       "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21, "strictatime": 1 << 24}


def mount(src, target, fstype, flags, data):
    enc = lambda s: s.encode() if s is not None else None
    rc = state.libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    return rc == 0, os.strerror(ctypes.get_errno())


def parse_mountinfo(text):
    """[(mount point, per-mount flags)] of /proc/self/mountinfo (fs_lockdown.cpp parse_mountinfo)."""
    import re
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 6:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), f[4])
        flags = 0
        for o in f[5].split(","):
            flags |= _MOUNT_OPTION_FLAGS.get(o, 0)
        out.append((point, flags))
    return out


def _under(path, d):
    return path == d or path.startswith(d.rstrip("/") + "/")


def lock_down_filesystem(cover, keep):
    """As src/sandbox/fs_lockdown.cpp lock_down_filesystem: inside the child's own (private) mount
    namespace, every mount but /proc's, `cover`'s and `keep`'s bind-remounted read-only with its
    other flags kept, then a fresh tmpfs on each directory of `cover` that exists. The note."""
    try:
        with open("/proc/self/mountinfo") as f:
            mounts = parse_mountinfo(f.read())
    except OSError as e:
        mounts, failed = [], "/proc/self/mountinfo: %s" % e.strerror
    else:
        failed = "" if mounts else "/proc/self/mountinfo: empty"
    seen, readonly = set(), 0
    for point, flags in mounts:
        if _under(point, "/proc") or point in seen:
            continue  # a stacked mount: the path reaches the top one
        seen.add(point)
        if any(_under(point, d) for d in tuple(cover) + tuple(keep)):
            continue
        ok, why = mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | (flags & ~MS_RDONLY), None)
        if ok:
            readonly += 1
        elif ctypes.get_errno() != errno.ENOENT and not failed:  # unreachable by its path: not writable through it
            failed = "%s: %s" % (point, why)
    note = "fs-readonly=partial(%s)" % failed if failed else "fs-readonly(%d mounts)" % readonly
    covered, cover_failed = [], ""
    for d in cover:
        if not os.path.isdir(d) or os.path.islink(d):
            continue
        ok, why = mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")
        if ok:
            covered.append(d)
        elif not cover_failed:
            cover_failed = "%s: %s" % (d, why)
    if covered:
        note += " private-tmpfs(%s)" % ",".join(covered)
    if cover_failed:
        note += " private-tmpfs=partial(%s)" % cover_failed
    return note


def open_build_dirs(build_dirs):
    """{dir: O_PATH descriptor} of the build caches that exist, opened before /var/tmp is covered."""
    fds = {}
    for d in build_dirs:
        try:
            fds[d] = os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            pass  # no build cache there: nothing to load from
    return fds


def mount_build_dirs(fds, writable):
    """Each build cache back at its own path (under a fresh tmpfs, or over itself), read-only unless
    `writable` (the build child's). Returns the note, or an error: a gate child that could write
    its build cache could plant a .so for any later load."""
    done = 0
    for d, fd in fds.items():
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            return None, "cannot make the mount point of the build cache %s: %s" % (d, e.strerror)
        ok, why = mount("/proc/self/fd/%d" % fd, d, None, MS_BIND, None)
        if ok:
            ok, why = mount(None, d, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (0 if writable else MS_RDONLY), None)
        os.close(fd)
        if not ok:
            return None, "cannot mount the build cache %s: %s" % (d, why)
        done += 1
    if not done:
        return "", None
    return " build-cache-%s(%d)" % ("rw" if writable else "ro", done), None
