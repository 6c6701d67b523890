"""Which files a visitor may make the server open: only their uploads.

Gradio hands handlers the path of each uploaded file. With `preprocess=False` (the app
decodes images itself) that path is whatever the client sent, so every handler checks it
here. A path outside the upload folder and a missing file get the same answer, so a
visitor learns nothing about the server's files, and messages never print server paths.

Server policy of ui/ (its last floor, docs/architecture.md), with no Gradio, no model and no
picture: ui/common.py, ui/explore_handlers.py, ui/limits.py and ui/outputs.py use it.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

REFUSED = "this file is not an upload of this app: upload the file again"


class UploadRefused(ValueError):
    """A path that is not a readable file inside the upload folder; the message never says which."""


def checked_upload(path: str | os.PathLike | None, upload_root: str | os.PathLike) -> Path:
    """`path` resolved (symlinks followed) if it is a regular file inside `upload_root`;
    otherwise UploadRefused with one message whatever the reason."""
    if not path:
        raise UploadRefused(REFUSED)
    root = Path(upload_root).resolve()
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # symlink loops, NUL bytes
        raise UploadRefused(REFUSED) from e
    if not (resolved.is_relative_to(root) and resolved != root and resolved.is_file()):
        raise UploadRefused(REFUSED)
    return resolved


SPACE_FULL = "the server's space for uploads is full right now: try again in a few minutes"


class UploadSpaceFull(UploadRefused):
    """A file that arrived does not fit the upload folder's budget, even with older files gone."""


def sender_full(sent: int, cap: int) -> str:
    """What a sender over its share is told (`sent`, `cap`: bytes within FRESH_S)."""
    mb = 10**6
    return (
        f"your network has uploaded {sent / mb:,.0f} MB to this server in the last two minutes, the most it takes "
        f"from one network in that time is {cap / mb:,.0f} MB: try again in a minute"
    )


def _files(root: str | os.PathLike) -> list[tuple[float, int, Path]]:
    """(mtime, bytes, path) of every regular file under `root` (symlinks neither followed nor
    counted). os.scandir reads each entry's type with the directory, so a folder of tens of
    thousands of rendered views costs one stat per file."""
    files, folders = [], [Path(root).resolve()]  # resolved, as the paths in `keep` are
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:  # deleted meanwhile by Gradio's own hourly clean-up
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    stat = entry.stat(follow_symlinks=False)
                    files.append((stat.st_mtime, stat.st_size, Path(entry.path)))
            except OSError:
                continue
    return files


def _delete(path: Path, root: Path) -> None:
    """Delete `path`, and its folder when that is left empty (the app writes each view into a
    folder of its own, ui.outputs.cache_path): empty folders would make every walk longer."""
    path.unlink(missing_ok=True)
    if path.parent != root:
        try:
            path.parent.rmdir()
        except OSError:  # not empty, or already gone
            pass


# An upload never pushes out a file younger than FRESH_S: another visitor's upload may still wait for
# its handler behind a class's analyses, a view just drawn for Gradio to serve it. Without it an
# upload flood within the budget pushed a class's fresh uploads out before their handlers read them
# (the soak, issue 28): now the flood is refused (UploadSpaceFull) until its own files age. Young
# files may fill only UPLOAD_SHARE of the budget by uploads; the rest is room for the views the app
# draws meanwhile, whose writes keep the folder within the whole budget, oldest files first.
FRESH_S = 120.0
UPLOAD_SHARE = 0.75
# A walk that finds no room for an upload holds for REFUSED_S for uploads at least as large: a
# flood of refused uploads from addresses past no share (each the first upload of a new address: a
# sender with many, such as an IPv6 network) would each walk the folder under the budget's lock,
# which every view drawn waits on.
# Room comes back as young files age (FRESH_S), not within a second.
REFUSED_S = 1.0
# One sender (an address: a visitor, or a whole school behind one router) may send at most
# SENDER_SHARE of that room within FRESH_S: the soak's attacker alone filled it with admitted 19 MB
# uploads, and every visitor's upload was refused for two minutes. A quarter of the default 2 GiB
# budget's room is 384 MiB: thirty phone photos of a class behind one router fit many times over.
SENDER_SHARE = 0.25
# A walk prunes the folder down to LOW_WATER of the budget, not to the budget itself: pruned to the
# brim, the next view drawn passed it again, and with the folder at its budget every click walked
# tens of thousands of files under the budget's lock (the 50-minute soak: clicks waited 20 to 35 s
# from the minute the folder filled); uploads, which pruned to the brim until the quiet soak on
# 26cc0c5, walked one after another, and six of the class's waited past 5 s. A tenth of the budget
# is room for thousands of views and hundreds of photos between walks.
LOW_WATER = 0.9
# While another request walks the folder (a view past the budget started a prune, or the minute's
# check), an upload the count has no room for may still be held if it keeps the count within
# WALK_OVERDRAFT of the budget past it: the walk under way leaves a tenth free when it ends. Waiting
# for it instead, the quiet soak on 1088e46 had class uploads of 1 to 3 kB wait 3.2 to 4.5 s (its
# client gives up at 5 s); 2 % of the default budget, 41 MiB, is room for hundreds of photos.
WALK_OVERDRAFT = 0.02


def _young(files: list[tuple[float, int, Path]]) -> set[Path]:
    """The files of `files` modified within FRESH_S of now (wall clock, as mtimes are)."""
    since = time.time() - FRESH_S
    return {path for mtime, _, path in files if mtime > since}


def _prune(files: list[tuple[float, int, Path]], root: Path, budget_bytes: int, keep: Collection[Path]) -> int:
    """Delete the oldest of `files` (never `keep`) until the rest fit `budget_bytes`; the bytes freed."""
    used, freed = sum(size for _, size, _ in files), 0
    for _, size, path in sorted(files, key=lambda f: f[0]):
        if used - freed <= budget_bytes:
            break
        if path in keep:
            continue
        _delete(path, root)
        freed += size
    return freed


def _held(files: list[tuple[float, int, Path]], keep: Collection[Path], budget_bytes: int, adding: int) -> set[Path]:
    """What an upload of `adding` bytes may not push out: `keep` and the young files. UploadSpaceFull
    when those and it pass the budget, or the young files and it pass UPLOAD_SHARE of it."""
    young = _young(files) - {*keep}
    young_bytes = sum(size for _, size, path in files if path in young) + adding
    kept_bytes = sum(size for _, size, path in files if path in keep)
    if kept_bytes + young_bytes > budget_bytes or young_bytes > UPLOAD_SHARE * budget_bytes:
        raise UploadSpaceFull(SPACE_FULL)
    return young | {*keep}


def _no_room_for(files: list[tuple[float, int, Path]]) -> float:
    """Seconds to refuse uploads as large after a walk of `files` found no room for one:
    REFUSED_S, or less where the first young file ages out (FRESH_S) sooner."""
    now = time.time()
    ages_out = min((mtime + FRESH_S for mtime, _, _ in files if mtime > now - FRESH_S), default=now)
    return min(REFUSED_S, ages_out - now)


def admit(
    path: Path, root: str | os.PathLike, budget_bytes: int, keep: Collection[Path] = (), prune_to: float = 1.0
) -> int:
    """Make room for `path`, a file that just arrived under `root`: older files go first (never
    `keep`, never one younger than FRESH_S), until the folder is within `prune_to` of the budget.
    A file that would not fit even then (within UPLOAD_SHARE of the budget beside those) is
    deleted and refused, and frees nothing. Returns the bytes under `root` afterwards."""
    files = _files(root)
    used = sum(size for _, size, _ in files)
    if path in keep:  # one of the app's own files (an example): already there, always allowed
        return used
    others = [f for f in files if f[2] != path]
    try:
        held = _held(others, keep, budget_bytes, path.stat().st_size) | {path}
    except UploadSpaceFull:
        path.unlink(missing_ok=True)
        raise
    return used - _prune(files, Path(root).resolve(), int(prune_to * budget_bytes), held)


class UploadBudget:
    """A folder's disk budget, held when each file arrives without walking the folder for each
    one: the folder is walked (and pruned, `admit`) only when the files counted since the last
    walk could exceed the budget, or when that walk is older than `recount_s` (files that came
    some other way are then counted). A class of 30 leaves tens of thousands of rendered views
    in the folder within Gradio's one-hour clean-up; one walk per upload cost seconds of CPU.

    Two locks: the count's, held for arithmetic only, and the walk's, one walk (and its
    deletions) at a time. A view drawn is counted without waiting for a walk: walked under the
    count's lock, a folder at its budget (8,000 views: 0.1 s a walk on an idle core, more beside
    a class) held up every click drawn meanwhile. Files counted while a walk is under way
    are added to what it found (`_counted`): one it also saw is counted twice until the next
    walk, which errs toward pruning early, never toward passing the budget."""

    def __init__(
        self, folder: Callable[[], Path], budget_bytes: int, keep: Collection[Path] = (), recount_s: float = 60.0
    ) -> None:
        self.folder = folder  # asked each time: Gradio's folder follows GRADIO_TEMP_DIR
        self.budget_bytes, self.keep, self.recount_s = budget_bytes, frozenset(keep), recount_s
        self._lock = threading.Lock()  # the counts below
        self._walking = threading.Lock()  # one walk at a time; never taken under `_lock`
        self._used: int | None = None  # bytes under the folder at the last walk, plus arrivals since
        self._counted = 0  # bytes of every arrival counted so far: a walk's mark (`_recount`)
        self._arriving = 0  # bytes of uploads reserved and still arriving (`reserve`)
        self._walked: tuple[Path | None, float] = (None, -math.inf)  # which folder, when
        self._sent: dict[str, list[tuple[float, int]]] = {}  # sender -> (when, bytes) of its recent uploads
        self._short: tuple[Path, float, int] | None = None  # a walk found no room: where, until when, for how much
        self._pruner: threading.Thread | None = None  # the prune a view past the budget started

    def added(self, size: int) -> None:
        """Count a file the app itself just wrote (a rendered view, an export); once the count
        passes the budget, prune down to LOW_WATER of it in a thread of its own: the folder never
        waits for the next upload or the periodic prune over its budget (the soak found it 12 MB
        over), the writes that follow find room without a walk each, and the request that passed
        the budget does not wait for the walk either."""
        with self._lock:
            self._counted += size
            if self._used is None:
                return
            self._used += size
            if self._used <= self.budget_bytes or (self._pruner is not None and self._pruner.is_alive()):
                return
            self._pruner = threading.Thread(target=self.prune, args=(LOW_WATER,), name="upload-prune", daemon=True)
            self._pruner.start()

    def pruned(self, timeout: float | None = None) -> None:
        """Wait for the prune `added` started, if one is under way (the tests)."""
        pruner = self._pruner
        if pruner is not None:
            pruner.join(timeout)

    def admit(self, path: Path) -> None:
        """`admit`, walking the folder only when the count since the last walk says it must."""
        if path in self.keep:
            return
        size, root = path.stat().st_size, Path(self.folder()).resolve()
        if self._count_if_it_fits(root, size) or self._count_if_it_fits(root, size, self._overdraft()):
            return
        with self._walking:
            if self._count_if_it_fits(root, size):  # a walk finished meanwhile made room
                return
            with self._lock:
                mark = self._counted
            try:
                used = admit(path, root, self.budget_bytes, self.keep, LOW_WATER)
            except UploadSpaceFull:
                with self._lock:
                    self._used = None  # unknown: the next arrival walks
                raise
            with self._lock:
                self._recount(root, used, mark)

    def _count_if_it_fits(self, root: Path, size: int, overdraft: int = 0) -> bool:
        """Count a file of `size` that arrived under `root` if the count since the last walk has
        room for it (past the budget by `overdraft` at most); False (nothing counted) when only a
        walk can tell."""
        with self._lock:
            if not self._fits(root, size, overdraft):
                return False
            self._used += size
            self._counted += size
            return True

    def reserve(self, size: int, sender: str | None = None) -> None:
        """Hold `size` bytes for an upload before its body is read (Gradio's upload route needs no
        event: 177 uploads of 19 MB went up in 6.2 s, 3,382 MB against a 30 MB budget until the
        next prune). Counted with the uploads still arriving; when they could pass the budget the
        folder is walked and its oldest files pruned; an upload that cannot fit even then is
        refused (UploadSpaceFull) and nothing is deleted for it, and so is one that would take
        `sender` (its address) past SENDER_SHARE of the uploads' room within FRESH_S, before any
        walk: the soak's 177 refused uploads each walked the folder of a class's views under the
        lock that every view drawn waited on, and the class's clicks took 6 s. `arrived` ends the hold."""
        root = Path(self.folder()).resolve()
        if self._hold_if_it_fits(root, size, sender) or self._hold_if_it_fits(root, size, sender, self._overdraft()):
            return
        with self._walking:
            if self._hold_if_it_fits(root, size, sender):
                return
            with self._lock:
                mark = self._counted
            files = _files(root)
            with self._lock:
                since = self._counted - mark  # counted while the folder was walked
                try:
                    held = _held(files, self.keep, self.budget_bytes, self._arriving + size)
                except UploadSpaceFull:
                    self._short = root, time.monotonic() + _no_room_for(files), size
                    raise
                self._check_sender(sender, size)  # an upload of the sender's may have been held meanwhile
                room = int(LOW_WATER * self.budget_bytes) - self._arriving - since - size
                self._hold(size, sender)
            freed = _prune(files, root, room, held)
            with self._lock:
                self._recount(root, sum(bytes_ for _, bytes_, _ in files) - freed, mark)

    def _overdraft(self) -> int:
        """Bytes an arrival may take the count past the budget now: WALK_OVERDRAFT of it while
        another request walks the folder (its prune ends below the budget), else none."""
        return int(WALK_OVERDRAFT * self.budget_bytes) if self._walking.locked() else 0

    def _hold_if_it_fits(self, root: Path, size: int, sender: str | None, overdraft: int = 0) -> bool:
        """Refuse an upload past its sender's share or past a walk that found no room; hold it if
        the count has room for it (past the budget by `overdraft` at most); False when only a
        walk can tell."""
        with self._lock:
            self._check_sender(sender, size)
            if self._fits(root, size, overdraft):
                self._hold(size, sender)
                return True
            if self._short_of(root, size):
                raise UploadSpaceFull(SPACE_FULL)
            return False

    def _hold(self, size: int, sender: str | None) -> None:
        """Count an upload of `size` as arriving, and as sent by `sender` (under `_lock`)."""
        self._arriving += size
        if sender is not None:
            self._sent.setdefault(sender, []).append((time.monotonic(), size))

    def _fits(self, root: Path, size: int, overdraft: int = 0) -> bool:
        """Whether the count since the last walk of `root` can be trusted (younger than
        `recount_s`) and has room for `size` more bytes beside the uploads arriving, past the
        budget by `overdraft` at most."""
        walked, at = self._walked
        fresh = self._used is not None and walked == root and time.monotonic() - at < self.recount_s
        return fresh and self._used + self._arriving + size <= self.budget_bytes + overdraft

    def _recount(self, root: Path, used: int, mark: int) -> None:
        """A walk of `root` that began at count `mark` found `used` bytes (under `_lock`)."""
        self._used, self._walked = used + self._counted - mark, (root, time.monotonic())

    def _short_of(self, root: Path, size: int) -> bool:
        """Whether a walk of `root` found no room for an upload of `size` or less, and no file
        has aged or gone since (`_short`)."""
        if self._short is None:
            return False
        where, until, short = self._short
        return where == root and size >= short and time.monotonic() < until

    def _check_sender(self, sender: str | None, size: int) -> None:
        """Refuse an upload that takes `sender` past its share; forget sends older than FRESH_S."""
        since = time.monotonic() - FRESH_S
        for who in [who for who, sends in self._sent.items() if not sends or sends[-1][0] < since]:
            del self._sent[who]  # every send of `who` is old: the map holds only recent senders
        if sender is None:
            return
        sends = self._sent[sender] = [s for s in self._sent.get(sender, []) if s[0] >= since]
        sent, cap = sum(n for _, n in sends), int(SENDER_SHARE * UPLOAD_SHARE * self.budget_bytes)
        if sent and sent + size > cap:  # one file is always the room's business alone
            raise UploadSpaceFull(sender_full(sent + size, cap))

    def arrived(self, size: int) -> None:
        """An upload `reserve`d has been stored (or failed): its bytes now count as files; the
        next walk counts what is really there."""
        with self._lock:
            self._arriving -= size
            self._counted += size
            self._short = None  # a failed upload's bytes never came: room a walk may find
            if self._used is not None:
                self._used += size

    def prune(self, to: float = 1.0) -> int:
        """Walk and prune the folder (the periodic check): its oldest files are deleted until
        what is left fits `to` times the budget, never `keep` (the app's own files, such as its
        examples' cached copies); the newest (a fresh upload, a view just drawn) go last. The
        bytes freed."""
        with self._walking:
            root = Path(self.folder()).resolve()
            with self._lock:
                mark = self._counted
            files = _files(root)
            freed = _prune(files, root, int(to * self.budget_bytes), self.keep)
            with self._lock:
                self._recount(root, sum(size for _, size, _ in files) - freed, mark)
                if freed:
                    self._short = None  # the files deleted may have been young
            return freed
