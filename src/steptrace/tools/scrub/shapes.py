"""Tell a host name from a Python name, an IP address from a version, a user's folder from a
project's: the decisions the patterns of ``patterns`` leave to code.

* Host names: a dotted name whose last label is a common generic top-level domain
  (``.com``, ``.edu``...), or a country code, a cluster-local suffix (``.cluster``,
  ``.internal``, ``.local``...) when the name has three labels or its first label holds a
  digit or a hyphen (``node12.cs.example.edu``, ``gpu-node-44.cluster``), or any dotted
  name with a hyphen in a label (a Python name has none). ``torch.nn.functional``,
  ``model.py``, ``torch.mm`` (Myanmar) or ``self.bn`` (Brunei) are not host names: country
  codes that are also Python or file words are never taken for one.
* IPv4: four numbers 0-255 without leading zeros. A version (``12.8.4.1``) looks the same:
  after ``==``, ``v`` or a word such as *version* it is a version; with a port, after an
  address word (``addr``, ``host``, ``via``...) or under a host field it is an address;
  otherwise it is an address when private, loopback, link-local or shared (``10.``,
  ``192.168.``, ``127.``...) or when its first number is 32 or more, else a version.
* IPv6: a valid address (stdlib ``ipaddress``) of at least three groups, or of any size in
  brackets, with a port or a zone, or after an address word: ``c10::add`` is C++.
* Users in cluster paths: under ``/scratch``, ``/work``, ``/gpfs``, ``/lustre``... the folder
  after a ``home``/``users``/``scratch`` folder, else the first folder that is not a
  file-system word (``gpfs``, ``projects``, a one-letter folder...).
"""

from __future__ import annotations

import ipaddress
import re

_GENERIC_TLDS = frozenset(
    {
        "com",
        "net",
        "org",
        "edu",
        "gov",
        "mil",
        "io",
        "ai",
        "dev",
        "app",
        "cloud",
        "biz",
        "xyz",
        "online",
        "arpa",
    }
)
_LOCAL_SUFFIXES = frozenset(
    {
        "internal",
        "local",
        "localdomain",
        "lan",
        "cluster",
        "corp",
        "intra",
        "intranet",
        "home",
        "priv",
        "private",
        "hpc",
        "domain",
    }
)
# without the codes that are also Python or file words: py pt so sh cc cu md pl to is ...
_COUNTRIES = """ac ad ae af ag al am aq ar au aw ax az ba bb bd be bf bg bh bi bj bm bo br bs bt bw
bz ca cd cf cg ch ci ck cm cn co cr cw cx cy cz de dj dk dm dz ec ee eg er es et eu fi
fj fk fm fo fr ga gd gf gg gh gi gm gn gp gq gr gu gw gy hk hm hn hr ht hu ie il iq ir
je jm jo jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk ls lu lv ly mc mg mh mn mo
mp mq mr mu mw mx my mz nc nf ng ni nl nr nu nz om pa pf pg pk pn pr pw qa ro ru rw sb
sc se sg si sk sl sm sn sr ss sv sx sy sz tc td tg tj tk tl tm tn tt tv tw tz ua ug uk
us uy uz vc ve vg vi vn vu wf ws ye yt za zm zw"""
_EXTENSIONS = """py pyc pyi pyx pt pth bin json yaml yml txt log ckpt safetensors so cc cpp cxx
c h hpp cu cuh csv tsv gz tar zip bz2 xz npy npz onnx pkl md rst sh html xml toml ini cfg conf
lock whl egg png jpg jpeg svg pdf h5 parquet engine plan trt dll dylib exe jar js ts css
ipynb app"""
_COUNTRY_CODES = frozenset(_COUNTRIES.split())
_FILE_EXTENSIONS = frozenset(_EXTENSIONS.split())
_VERSION_BEFORE = re.compile(r"(?:[=<>~!]=|[vV]|(?i:version|ver|release|driver|build)\W{0,3})$")
_ADDRESS_BEFORE = re.compile(
    r"(?<![A-Za-z])(?i:addr|address|ip|ipv[46]|host|hostname|inet|server|peer|endpoint|master|nameserver"
    r"|gateway|dns|from|via|connect(?:ed|ing)?(?: to)?)\W{0,3}$"
)
_SHARED_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
_COMMON_FOLDERS = frozenset(
    {
        "main",
        "src",
        "code",
        "app",
        "repo",
        "repos",
        "run",
        "runs",
        "exp",
        "experiments",
        "model",
        "models",
        "data",
        "datasets",
        "output",
        "outputs",
        "logs",
        "job",
        "jobs",
        "temp",
        "test",
        "tests",
        "dev",
        "prod",
        "env",
        "envs",
        "venv",
        "conda",
        "bin",
        "lib",
        "opt",
        "share",
        "cache",
        "workspace",
        "train",
        "training",
    }
)
_FS = re.compile(r"fs\d*|scratch\d*|work\d*")
_LOOK_BEHIND = 24  # characters before an address that can say what it is
_PATH_MARKERS = frozenset({"home", "homes", "users", "user", "people", "scratch", "members"})
_FS_WORDS = frozenset(
    {
        "gpfs",
        "lustre",
        "scratch",
        "work",
        "users",
        "user",
        "home",
        "homes",
        "projects",
        "project",
        "proj",
        "shared",
        "group",
        "groups",
        "data",
        "sd",
        "nobackup",
        "global",
        "cfs",
        "cdirs",
        "alpine",
        "orion",
        "fsx",
        "checkpoint",
        "public",
        "common",
        "tmp",
        "world-shared",
        "proj-shared",
        "scratch1",
        "scratch2",
        "work1",
        "work2",
    }
)


def is_host(name: str) -> bool:
    """Whether a dotted name (no port) is a host name rather than code or a file."""
    labels = name.split(".")
    last = labels[-1].lower()
    if len(labels) < 2 or not last.isalpha() or last in _FILE_EXTENSIONS:
        return False
    if last in _GENERIC_TLDS:
        return True
    first = labels[0]
    numbered = any(char.isdigit() or char == "-" for char in first) and not first.isdigit()
    strong = len(labels) >= 3 or numbered
    if last in _LOCAL_SUFFIXES or last in _COUNTRY_CODES:
        return strong
    return len(last) >= 2 and any("-" in label for label in labels)


def is_path_host(name: str, root: str) -> bool:
    """Whether the first folder of a path that opens with ``root`` names a host: always after
    two backslashes (a UNC path, ``\\\\fileserver01\\share``); after ``//`` only when it
    holds a digit or is a host name or an address (``//usr/lib`` is a doubled slash)."""
    if root != "//":
        return True
    return any(char.isdigit() for char in name) or is_host(name)


def is_file_extension(word: str) -> bool:
    """Whether a top-level domain is rather a file's extension (``model@v2.py``)."""
    return word.lower() in _FILE_EXTENSIONS


def is_ipv4_address(address: str, before: str, *, port: bool, host_field: bool) -> bool:
    """Whether four dotted numbers are an IPv4 address rather than a version."""
    parts = address.split(".")
    if any((len(part) > 1 and part[0] == "0") or int(part) > 255 for part in parts):
        return False
    before = before[-_LOOK_BEHIND:]
    if _VERSION_BEFORE.search(before):
        return False
    if port or host_field or _ADDRESS_BEFORE.search(before):
        return True
    ip = ipaddress.IPv4Address(address)
    special = ip.is_private or ip.is_loopback or ip.is_link_local or ip in _SHARED_SPACE
    return (special and parts[0] != "0") or int(parts[0]) >= 32


def is_ipv6_address(address: str, before: str, *, framed: bool, host_field: bool) -> bool:
    """Whether colon-separated hex is an IPv6 address rather than a C++ scope or a time.

    ``framed``: in brackets, or with a port or a zone.
    """
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError:
        return False
    if ip.ipv4_mapped is not None:  # ::ffff:10.1.2.3: an IPv4 address written for IPv6
        return True
    groups = [group for group in address.split(":") if group]
    if framed or host_field or _ADDRESS_BEFORE.search(before[-_LOOK_BEHIND:]):
        return True
    return len(groups) >= 3


def cluster_user(folders: list[str]) -> int | None:
    """Which of the folders after a cluster root (``/scratch/``...) is the user's."""
    for place, folder in enumerate(folders):
        if folder.lower() in _PATH_MARKERS:
            following = folders[place + 1 : place + 2]
            return place + 1 if following and _could_be_user(following[0]) else None
    for place, folder in enumerate(folders):
        lowered = folder.lower()
        if _could_be_user(folder) and lowered not in _FS_WORDS and not _FS.fullmatch(lowered):
            return place
    return None


def _could_be_user(folder: str) -> bool:
    """Not one letter, not a number, not a file name (``train.py``)."""
    extension = folder.rpartition(".")[2].lower() if "." in folder else ""
    return len(folder) > 1 and not folder.isdigit() and extension not in _FILE_EXTENSIONS


def common_folder(name: str) -> bool:
    """A folder name too common to be replaced everywhere when a path suggests it is a user."""
    return name.lower() in _COMMON_FOLDERS
