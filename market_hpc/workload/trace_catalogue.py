"""The Parallel Workloads Archive logs this project knows, and fetching them into a cache.

The Parallel Workloads Archive (Feitelson, Tsafrir and Krakov, JPDC 2014;
https://www.cs.huji.ac.il/labs/parallel/workload/) publishes real traces in the Standard
Workload Format. Each catalogue entry names one cleaned log, where the archive serves it,
its size and SHA-256 (taken from the archive's file), and the platform preset that models
the machine it was recorded on. ``market-hpc trace list`` prints the catalogue and
``market-hpc trace fetch NAME`` downloads a log, checks its checksum and keeps it under the
user's cache folder, where ``replay NAME`` and scenario files (``trace = "kth-sp2"``) find
it (:func:`resolve_trace`).

Sites without direct access name a mirror: a base URL under which the archive's file names
are served (``--mirror https://mirror.example/pwa`` fetches
``.../pwa/KTH-SP2-1996-2.1-cln.swf.gz``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from market_hpc.errors import ConfigError, MarketHpcError, UnknownNameError

ARCHIVE = "https://www.cs.huji.ac.il/labs/parallel/workload"
_CHUNK = 1 << 16
SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


class TraceFetchError(MarketHpcError):
    """A catalogue trace could not be downloaded or did not match its checksum."""


@dataclass(frozen=True)
class CatalogueTrace:
    """One archive log: where it lives, what it is, and how to model its machine.

    Attributes:
        name: Short name used on the command line (``kth-sp2``).
        file: The archive's file name (also the name in the cache).
        folder: The archive's folder of that log (``l_kth_sp2``).
        size: Size of the file in bytes.
        sha256: SHA-256 of the file, hex.
        platform: The platform preset that models the machine (``--platform``).
        jobs: Number of jobs in the cleaned log.
        system: The machine and the years the log covers.
    """

    name: str
    file: str
    folder: str
    size: int
    sha256: str
    platform: str
    jobs: int
    system: str

    def url(self, mirror: str | None = None) -> str:
        """Where to download the file: the archive, or ``mirror`` followed by the file name."""
        if mirror is not None:
            return f"{mirror.rstrip('/')}/{self.file}"
        return f"{ARCHIVE}/{self.folder}/{self.file}"


CATALOGUE: dict[str, CatalogueTrace] = {
    entry.name: entry
    for entry in (
        CatalogueTrace(
            "kth-sp2",
            "KTH-SP2-1996-2.1-cln.swf.gz",
            "l_kth_sp2",
            404_417,
            "c8c1a8db8b99cce4aa8d823a769280debca90485e30758ba35a76b17ac5485bb",
            "kth-sp2",
            27_992,
            "IBM SP2, KTH Stockholm, 100 nodes x 1, 1996-97",
        ),
        CatalogueTrace(
            "nasa-ipsc",
            "NASA-iPSC-1993-3.1-cln.swf.gz",
            "l_nasa_ipsc",
            207_976,
            "281217ee3af463f165c746c1fea35ff3f1935ba267e4728c403045b7fb7cfd97",
            "nasa-ipsc",
            18_239,
            "Intel iPSC/860, NASA Ames, 128 nodes, 1993",
        ),
        CatalogueTrace(
            "hpc2n",
            "HPC2N-2002-2.1-cln.swf.gz",
            "l_hpc2n",
            2_997_863,
            "e56a97045de773f2a395acaf74cb04e6e3393b9c8c5ae12b542b5de93bb04838",
            "hpc2n",
            202_876,
            "Linux cluster Seth, HPC2N, 120 nodes x 2, 2002-06",
        ),
        CatalogueTrace(
            "curie",
            "CEA-Curie-2011-2.1-cln.swf.gz",
            "l_cea_curie",
            3_629_411,
            "2a0fdbd40837590b491bbbac7d4cfe521de1f0b14c0dc39bbf82c4e49ea75bce",
            "curie",
            312_826,
            "CEA Curie (Slurm), 5,544 thin/fat/hybrid nodes, 2011-12",
        ),
    )
}


def cache_dir() -> Path:
    """The folder fetched traces are kept in.

    ``$MARKET_HPC_CACHE/traces`` when that variable is set, else
    ``$XDG_CACHE_HOME/market-hpc/traces``, else ``~/.cache/market-hpc/traces``.
    """
    if os.environ.get("MARKET_HPC_CACHE"):
        return Path(os.environ["MARKET_HPC_CACHE"]) / "traces"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "market-hpc" / "traces"


def catalogue_entry(name: str) -> CatalogueTrace:
    """The catalogue entry of ``name`` (its short name or its archive file name).

    Raises:
        UnknownNameError: ``name`` is not in the catalogue; the message lists the names.
    """
    entry = _lookup(name)
    if entry is None:
        raise UnknownNameError(
            "catalogue trace", name, CATALOGUE, " (market-hpc trace list shows them)"
        )
    return entry


def catalogue_lookup(name: str) -> CatalogueTrace | None:
    """The entry named ``name`` (its name in any case, or its archive file name), else ``None``.

    >>> catalogue_lookup("KTH-SP2").name, catalogue_lookup("HPC2N-2002-2.1-cln.swf.gz").name
    ('kth-sp2', 'hpc2n')
    """
    return _lookup(name)


def _lookup(name: str) -> CatalogueTrace | None:
    folded = name.lower()
    return CATALOGUE.get(name) or next(
        (e for e in CATALOGUE.values() if folded in (e.name.lower(), e.file.lower())), None
    )


def cached_path(entry: CatalogueTrace) -> Path:
    """Where ``entry`` is (or would be) kept in the cache."""
    return cache_dir() / entry.file


def is_verified(entry: CatalogueTrace) -> bool:
    """Whether the cache holds ``entry`` with the catalogue's SHA-256."""
    target = cached_path(entry)
    return target.is_file() and sha256_of(target) == entry.sha256


def sha256_of(path: Path) -> str:
    """SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_trace(
    entry: CatalogueTrace,
    mirror: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    force: bool = False,
    deadline: float | None = None,
    min_rate: float | None = None,
    rate_window: float | None = None,
) -> Path:
    """Download ``entry`` into the cache, verify its SHA-256 and return its path.

    A file already cached with the right checksum is kept (``force`` downloads it again).
    The download goes to a temporary file of its own beside the target and is renamed only
    after the checksum matched, so the cache never holds a partial or corrupt trace, also
    when the download is interrupted or two fetches run at once.

    Args:
        entry: The catalogue entry.
        mirror: Base URL serving the archive's file names, instead of the archive
            (``http://`` or ``https://``).
        progress: Called as ``progress(bytes_so_far, total_bytes)`` while downloading.
        force: Download even when a verified copy is cached.
        deadline: Seconds the whole download may take (``None``:
            ``http_fetch.DEFAULT_DEADLINE``).
        min_rate: Bytes per second each ``rate_window`` seconds must reach (0: no minimum;
            ``None``: ``http_fetch.DEFAULT_MIN_RATE``).
        rate_window: Seconds over which the rate is measured (``None``:
            ``http_fetch.RATE_WINDOW``).

    Returns:
        The cached file.

    Raises:
        ConfigError: ``mirror`` is not an http(s) base URL.
        TraceFetchError: The download failed (the URL and the cause are named, on one line),
            the cache folder cannot be written, or the file's size or checksum differ from
            the catalogue's.
    """
    from market_hpc.workload import http_fetch  # (only a fetch needs http.client and ssl)

    if mirror is not None:
        http_fetch.check_base_url(mirror)
    target = cached_path(entry)
    if not force and is_verified(entry):
        return target
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    except OSError as error:
        raise TraceFetchError(
            f"cannot write the trace cache {folder}: {error.strerror or error} "
            "(MARKET_HPC_CACHE names another folder)"
        ) from error
    partial = Path(name)
    url = entry.url(mirror)
    try:
        with os.fdopen(handle, "wb") as out:
            digest = http_fetch.download(
                url,
                out,
                entry.size,
                deadline=http_fetch.DEFAULT_DEADLINE if deadline is None else deadline,
                min_rate=http_fetch.DEFAULT_MIN_RATE if min_rate is None else min_rate,
                rate_window=http_fetch.RATE_WINDOW if rate_window is None else rate_window,
                progress=progress,
            )
        if digest != entry.sha256:
            raise TraceFetchError(
                f"{url}: got {entry.size:,} bytes with SHA-256 {digest}, expected "
                f"{entry.size:,} bytes with SHA-256 {entry.sha256}; the file was not kept"
            )
        partial.replace(target)
    except http_fetch.DownloadError as error:
        hint = (
            "; without direct access, fetch from a mirror: --mirror URL" if mirror is None else ""
        )
        raise TraceFetchError(f"cannot download {entry.name} from {url}: {error}{hint}") from None
    except OSError as error:
        raise TraceFetchError(
            f"cannot write the trace cache {folder}: {error.strerror or error}"
        ) from error
    finally:
        partial.unlink(missing_ok=True)
    return target


def trace_folders() -> list[Path]:
    """The folders searched for a trace given by name, after the cache.

    ``$MARKET_HPC_TRACES`` (one folder, or several separated by ``os.pathsep``) when that
    variable is set, else ``shared/traces`` beside the checkout (``../shared/traces`` from
    the repository).
    """
    listed = os.environ.get("MARKET_HPC_TRACES")
    if listed is not None:
        return [Path(folder) for folder in listed.split(os.pathsep) if folder]
    return [SHARED_TRACES]


def resolve_trace(trace: str, base_dir: Path | None = None) -> str:
    """The file to read for ``trace``: a path, a catalogue name or a trace file name.

    In order: ``trace`` as a path (relative to ``base_dir`` when given) when it exists; else,
    for a catalogue log (its name in any case, ``KTH-SP2``, or its archive file name; also
    the file name at the end of a path that does not exist), the copy ``trace fetch`` keeps
    in the cache; else a file of that name in :func:`trace_folders`. A catalogue log found
    nowhere is an error; anything else is returned as the path, for the reader to report.

    Raises:
        ConfigError: ``trace`` is a catalogue log found in none of these places (the message
            gives the command that fetches it).
    """
    given = Path(trace)
    if not trace or given.is_absolute():
        return trace  # kept as written: stored runs name their inputs by absolute path
    path = given if base_dir is None else base_dir / given
    if path.exists():
        return str(path.resolve()) if base_dir is not None else trace
    bare = given.name == trace
    entry = _lookup(given.name)
    if entry is None and not bare:
        return str(path.resolve()) if base_dir is not None else trace
    candidates = [cached_path(entry)] if entry is not None else []
    candidates += [folder / (entry.file if entry else trace) for folder in trace_folders()]
    found = next((candidate for candidate in candidates if candidate.is_file()), None)
    if found is not None:
        return str(found.resolve())
    if entry is None:
        return str(path.resolve()) if base_dir is not None else trace
    looked = ", ".join(str(candidate.parent) for candidate in candidates)
    alias = "" if trace == entry.name else f" ({entry.name})"
    raise ConfigError(
        f"trace {trace!r}{alias} is a catalogue log that is not in the cache nor the trace "
        f"folders (looked in {looked}); fetch it first: market-hpc trace fetch {entry.name} "
        "(without direct access, add --mirror URL)"
    )


def catalogue_table() -> list[str]:
    """The catalogue as aligned text lines, with whether each log is cached."""
    lines = [f"{'name':<10} {'jobs':>8} {'size':>9}  {'platform':<10} {'cached':<6}  system"]
    for entry in CATALOGUE.values():
        cached = "yes" if cached_path(entry).is_file() else "no"
        lines.append(
            f"{entry.name:<10} {entry.jobs:>8,} {entry.size / 1e6:>7.1f}MB  "
            f"{entry.platform:<10} {cached:<6}  {entry.system}"
        )
    lines.append(f"cache: {cache_dir()} (MARKET_HPC_CACHE overrides); archive: {ARCHIVE}")
    return lines
