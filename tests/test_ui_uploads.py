"""ui.uploads: only files inside the upload folder, one message for every refusal."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import ui.uploads
from ui.uploads import (
    LOW_WATER,
    REFUSED,
    WALK_OVERDRAFT,
    UploadBudget,
    UploadRefused,
    UploadSpaceFull,
    admit,
    checked_upload,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "uploads" / "abc").mkdir(parents=True)
    (tmp_path / "uploads" / "abc" / "cat.png").write_bytes(b"png")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.png").write_bytes(b"png")
    os.symlink(tmp_path / "private" / "secret.png", tmp_path / "uploads" / "link.png")
    return tmp_path / "uploads"


def test_an_upload_is_accepted(root: Path) -> None:
    assert checked_upload(str(root / "abc" / "cat.png"), root) == (root / "abc" / "cat.png").resolve()


@pytest.mark.parametrize(
    "path",
    [
        "{root}/../private/secret.png",  # exists, outside
        "{root}/../private/missing.png",  # missing, outside
        "{root}/abc/missing.png",  # missing, inside
        "{root}/link.png",  # a symlink out of the folder
        "{root}/abc",  # a folder
        "{root}",
        "/etc/passwd",
        "",
        "{root}/abc/\0.png",
    ],
)
def test_everything_else_gets_the_same_message(root: Path, path: str) -> None:
    with pytest.raises(UploadRefused) as info:
        checked_upload(path.format(root=root), root)
    assert str(info.value) == REFUSED and str(root) not in str(info.value)


def test_pruning_deletes_the_oldest_files_until_the_folder_fits(tmp_path: Path) -> None:
    for i, name in enumerate(["a/old.png", "b/middle.png", "c/new.png"]):
        path = tmp_path / name
        path.parent.mkdir()
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1000 + i, 1000 + i))
    assert UploadBudget(lambda: tmp_path, 2000).prune() == 1000
    assert not (tmp_path / "a/old.png").exists() and (tmp_path / "b/middle.png").exists()
    assert UploadBudget(lambda: tmp_path, 2000).prune() == 0  # already within the budget
    assert UploadBudget(lambda: tmp_path, 0).prune() == 2000 and not any(p.is_file() for p in tmp_path.rglob("*"))
    assert not any(tmp_path.iterdir())  # each file's own folder went with it: no walk meets empty folders


def test_a_file_is_admitted_or_refused_when_it_arrives_and_kept_files_stay(tmp_path: Path) -> None:
    """The budget holds at arrival (it used to be checked once a minute), and the app's own
    files (its examples' cached copies) are never the ones freed."""

    def write(name: str, size: int, age: int) -> Path:
        path = tmp_path / name
        path.parent.mkdir()
        path.write_bytes(b"x" * size)
        os.utime(path, (1000 + age, 1000 + age))
        return path

    example = write("e/cat.jpg", 500, 0)  # the oldest file: the first a plain prune would delete
    old = write("a/old.png", 600, 1)
    fresh = write("b/fresh.png", 600, 2)
    admit(fresh, tmp_path, 1200, keep={example})
    assert example.exists() and not old.exists() and fresh.exists()
    huge = write("c/huge.png", 2000, 3)
    with pytest.raises(UploadSpaceFull, match="space for uploads is full"):
        admit(huge, tmp_path, 1200, keep={example})
    assert not huge.exists() and example.exists() and fresh.exists()  # a refused file frees nothing
    assert UploadBudget(lambda: tmp_path, 0, keep={example}).prune() == 600 and example.exists()


@pytest.fixture
def walks(monkeypatch) -> list[int]:
    """Counts the walks of the upload folder."""
    counted, walk = [], ui.uploads._files
    monkeypatch.setattr(ui.uploads, "_files", lambda root: counted.append(1) or walk(root))
    return counted


def arrive(root: Path, name: str, size: int) -> Path:
    """A file of `size` bytes, newer than every file before it."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    age = 1000 + sum(1 for p in root.rglob("*") if p.is_file())
    os.utime(path, (age, age))
    return path


def test_uploads_within_the_budget_are_counted_without_walking_the_folder(tmp_path: Path, walks) -> None:
    """A class leaves tens of thousands of views in the folder: a walk per upload cost seconds."""
    budget = UploadBudget(lambda: tmp_path, 3000)
    budget.admit(arrive(tmp_path, "a/first.png", 1000))
    assert len(walks) == 1  # nothing counted yet: the first arrival walks
    budget.admit(arrive(tmp_path, "b/second.png", 1000))
    budget.added(arrive(tmp_path, "v/view.webp", 500).stat().st_size)  # a view the app drew
    assert len(walks) == 1
    third = arrive(tmp_path, "c/third.png", 1000)  # 3500 bytes counted: over the budget, so walk and prune
    budget.admit(third)
    assert len(walks) == 2 and not (tmp_path / "a/first.png").exists() and third.exists()
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= 3000


def test_a_file_the_app_writes_past_the_budget_prunes_at_once(tmp_path: Path, walks) -> None:
    """The soak found the folder 268 MB against a 256 MB budget: GIF and video exports
    were not counted, and a count past the budget waited for the next upload or minute to prune."""
    budget = UploadBudget(lambda: tmp_path, 3000)
    budget.admit(arrive(tmp_path, "a/first.png", 1000))
    budget.added(arrive(tmp_path, "v/view.webp", 1500).stat().st_size)  # 2500: within, no walk
    assert len(walks) == 1
    budget.added(arrive(tmp_path, "e/export.gif", 1000).stat().st_size)  # 3500: over, so walk and prune now
    budget.pruned()  # in a thread of its own (below)
    assert len(walks) == 2 and not (tmp_path / "a/first.png").exists() and (tmp_path / "e/export.gif").exists()
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= 3000


def test_with_the_folder_at_its_budget_a_view_drawn_does_not_walk_it_each_time(tmp_path: Path, walks) -> None:
    """The 50-minute soak: once the folder reached its budget, each view drawn passed it again
    and walked the folder (tens of thousands of files) under the budget's lock; clicks waited
    20 to 35 s. A walk the app's writes start leaves LOW_WATER of the budget."""
    budget = UploadBudget(lambda: tmp_path, 10_000)
    for i in range(100):
        arrive(tmp_path, f"old{i}/view.webp", 100)
    budget.admit(arrive(tmp_path, "a/upload.png", 100))  # 10,100 bytes: the first arrival walks, to LOW_WATER
    for i in range(20):  # twenty more views of the size of those before them
        budget.added(arrive(tmp_path, f"new{i}/view.webp", 100).stat().st_size)
        budget.pruned()
    assert len(walks) == 2  # the first view past the budget walked; the nine after it found room
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= LOW_WATER * 10_000 + 900


def test_with_the_folder_at_its_budget_an_upload_does_not_walk_it_each_time(tmp_path: Path, walks) -> None:
    """The quiet soak on 26cc0c5: with the folder at its budget all period, six of the class's
    uploads waited more than 5 s before Gradio read them. An upload's walk pruned to the brim, so
    the next upload walked again, one walk at a time. It now leaves LOW_WATER, as a view's does."""
    budget = UploadBudget(lambda: tmp_path, 10_000)
    for i in range(100):
        arrive(tmp_path, f"old{i}/view.webp", 100)
    for i in range(5):  # uploads of the size of the files before them, as Gradio's route makes them
        budget.reserve(100, "198.51.100.2")
        upload = arrive(tmp_path, f"up{i}/photo.png", 100)
        budget.arrived(100)  # counted when stored, and again when its handler admits it: 200 bytes each
        budget.admit(upload)
    assert len(walks) == 1  # the first upload walked; the four after it found room in the count (were 10 walks)
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= LOW_WATER * 10_000 + 1000


@pytest.fixture
def held_walk(monkeypatch):
    """Every walk of the upload folder waits until the test lets it go (`.set()`): a walk of a
    folder at its budget, thousands of views, takes a tenth of a second and more beside a class."""
    started, go, walk = threading.Event(), threading.Event(), ui.uploads._files

    def held(root):
        started.set()
        go.wait(timeout=30)
        return walk(root)

    monkeypatch.setattr(ui.uploads, "_files", held)
    yield started, go
    go.set()


def finishes(call, timeout: float = 10.0) -> bool:
    """Whether `call` returns within `timeout` seconds (it runs on in its thread if not)."""
    done = threading.Event()
    threading.Thread(target=lambda: (call(), done.set()), daemon=True).start()
    return done.wait(timeout)


def test_a_view_drawn_while_the_folder_is_walked_is_counted_without_waiting(tmp_path: Path, held_walk) -> None:
    """The 12- and 50-minute soaks: from the minute the folder filled, each walk (the minute's
    prune, an upload past the count) held the budget's lock, and the clicks drawn meanwhile waited
    for it: the class's click p95 rose by a third."""
    started, go = held_walk
    budget = UploadBudget(lambda: tmp_path, 10_000)
    walk = threading.Thread(target=budget.prune, daemon=True)
    walk.start()
    assert started.wait(10)
    assert finishes(lambda: budget.added(arrive(tmp_path, "v/view.webp", 100).stat().st_size))
    go.set()
    walk.join(10)


def test_the_view_that_passes_the_budget_does_not_wait_for_the_prune(tmp_path: Path, held_walk) -> None:
    started, go = held_walk
    budget = UploadBudget(lambda: tmp_path, 3000)
    old = arrive(tmp_path, "a/old.png", 2000)
    go.set()
    budget.admit(arrive(tmp_path, "b/upload.png", 500))  # walks: 2500 counted
    go.clear()
    started.clear()
    assert finishes(lambda: budget.added(arrive(tmp_path, "v/view.webp", 1000).stat().st_size))  # 3500: over
    assert started.wait(10) and old.exists()  # the prune it started is walking, in its own thread
    go.set()
    budget.pruned(10)
    assert not old.exists() and sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= LOW_WATER * 3000


def test_an_upload_with_room_in_the_count_is_held_while_the_folder_is_walked(tmp_path: Path, held_walk) -> None:
    started, go = held_walk
    budget = UploadBudget(lambda: tmp_path, 10_000)
    go.set()
    budget.reserve(1000)  # the first walk: the count is known
    go.clear()
    started.clear()
    walk = threading.Thread(target=budget.prune, daemon=True)
    walk.start()
    assert started.wait(10)
    assert finishes(lambda: budget.reserve(1000))
    go.set()
    walk.join(10)


def test_files_that_came_another_way_are_counted_at_the_next_walk(tmp_path: Path, walks, monkeypatch) -> None:
    budget = UploadBudget(lambda: tmp_path, 3000, recount_s=60.0)
    budget.admit(arrive(tmp_path, "a/first.png", 1000))
    arrive(tmp_path, "gradio/direct.png", 1500)  # not through a handler: the count does not know it
    clock = ui.uploads.time.monotonic() + 61.0
    monkeypatch.setattr(ui.uploads.time, "monotonic", lambda: clock)
    budget.admit(arrive(tmp_path, "b/second.png", 1000))  # the count is stale: walk, see 3500, prune
    assert len(walks) == 2 and not (tmp_path / "a/first.png").exists()


def test_a_refused_upload_leaves_the_count_unknown_and_the_next_arrival_walks(tmp_path: Path, walks) -> None:
    budget = UploadBudget(lambda: tmp_path, 1000)
    with pytest.raises(UploadSpaceFull):
        budget.admit(arrive(tmp_path, "a/huge.png", 5000))
    budget.admit(arrive(tmp_path, "b/small.png", 10))
    assert len(walks) == 2 and budget.prune() == 0


def test_uploads_still_arriving_are_held_to_the_budget_together(tmp_path: Path, walks) -> None:
    """Gradio's upload route needs no event: uploads are reserved by their length before their
    bytes are read, and those still arriving count together (177 × 19 MB went up at once)."""
    budget = UploadBudget(lambda: tmp_path, 3000)
    old = arrive(tmp_path, "a/old.png", 1500)
    budget.reserve(1000)  # walks once: 2500 of 3000
    budget.reserve(1000)  # 3500: walks again, the old file makes room
    assert len(walks) == 2 and not old.exists()
    with pytest.raises(UploadSpaceFull):  # the folder is empty, but 2000 bytes are still arriving
        budget.reserve(1500)
    assert len(walks) == 3
    budget.arrived(1000)
    budget.arrived(1000)  # stored: counted as files now, 2000 of 3000
    budget.reserve(900)
    assert len(walks) == 3  # fits the count: no walk


def test_an_upload_flood_is_refused_rather_than_push_out_another_visitors_fresh_upload(tmp_path: Path) -> None:
    """The soak: an attacker's 19 MB uploads, each within the budget, pushed a class's
    uploads out of the folder before their handlers read them ("not an upload of this app")."""
    budget = UploadBudget(lambda: tmp_path, 4000)  # young uploads may fill 3000 of it (UPLOAD_SHARE)
    theirs = tmp_path / "a" / "class.png"
    theirs.parent.mkdir()
    theirs.write_bytes(b"x" * 1500)  # just uploaded (now): its handler may not have read it yet
    budget.reserve(1400)  # the flood's first upload fits beside it
    with pytest.raises(UploadSpaceFull, match="try again in a few minutes"):
        budget.reserve(1400)  # the next one would need the class's fresh upload gone: refused instead
    assert theirs.exists()
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "flood.png").write_bytes(b"x" * 1400)
    budget.arrived(1400)
    aged = time.time() - ui.uploads.FRESH_S - 1  # once it is older than FRESH_S it may go
    os.utime(theirs, (aged, aged))
    budget.reserve(1500)  # 1400 young + 1500 within the share; the aged file makes the room
    assert not theirs.exists() and (tmp_path / "f" / "flood.png").exists()
    late = arrive(tmp_path, "b/late.png", 10)
    os.utime(late, None)  # now: young
    big = tmp_path / "c" / "big.png"
    big.parent.mkdir()
    big.write_bytes(b"x" * 1700)  # with the young 1,410 bytes, past the share: refused, nothing pushed out
    with pytest.raises(UploadSpaceFull):
        admit(big, tmp_path, 4000)
    assert late.exists() and not big.exists()


def test_one_sender_cannot_take_the_whole_room_for_uploads(tmp_path: Path, monkeypatch) -> None:
    """The 50-minute soak: the attacker's admitted 19 MB uploads filled the room young uploads may
    take, and for two minutes every visitor's upload was refused. One sender (an address) now gets
    SENDER_SHARE of that room within FRESH_S; the others keep theirs, and its share comes back."""
    clock = [1000.0]
    monkeypatch.setattr(ui.uploads.time, "monotonic", lambda: clock[0])
    budget = UploadBudget(lambda: tmp_path, 40_000)  # room 30,000 (UPLOAD_SHARE); a sender 7,500
    budget.reserve(4000, "203.0.113.7")
    budget.reserve(3000, "203.0.113.7")
    with pytest.raises(UploadSpaceFull, match=r"your network has uploaded .* in the last two minutes"):
        budget.reserve(1000, "203.0.113.7")  # 8,000 within two minutes: past its 7,500
    budget.reserve(7000, "198.51.100.2")  # a class behind another router still uploads
    budget.reserve(1000)  # and so does a sender the app cannot name
    clock[0] += ui.uploads.FRESH_S + 1
    budget.reserve(4000, "203.0.113.7")  # two minutes on, its share is back
    assert list(budget._sent) == ["203.0.113.7"]  # the senders of long ago are forgotten


def test_a_sender_past_its_share_is_refused_without_a_walk_or_a_file_deleted(tmp_path: Path, walks) -> None:
    """The soak: each of the attacker's 177 refused uploads walked the folder (tens of thousands
    of views) under the budget's lock, and pruned it, before its share refused it."""
    budget = UploadBudget(lambda: tmp_path, 40_000)  # a sender's share: 7,500
    old = arrive(tmp_path, "a/old.png", 28_000)  # older than FRESH_S: a walk would prune it
    budget.reserve(7_000, "203.0.113.7")  # fits the count after one walk
    assert len(walks) == 1 and old.exists()
    for _ in range(3):
        with pytest.raises(UploadSpaceFull, match="your network has uploaded"):
            budget.reserve(19_000, "203.0.113.7")  # over the count too: it would have walked
    assert len(walks) == 1 and old.exists()


def test_a_walk_that_found_no_room_holds_for_a_second_for_uploads_as_large(tmp_path: Path, walks, monkeypatch) -> None:
    """Uploads from addresses past no share (a sender with many addresses) refused for want of room
    would each walk the folder under the budget's lock; for REFUSED_S, one as large is refused
    without a walk, while a smaller one still walks and may fit, and so does one after an upload
    ended (a failed one frees its room)."""
    clock = [1000.0]
    monkeypatch.setattr(ui.uploads.time, "monotonic", lambda: clock[0])
    budget = UploadBudget(lambda: tmp_path, 4000)  # young uploads may fill 3000 of it
    young = tmp_path / "a" / "young.png"
    young.parent.mkdir()
    young.write_bytes(b"x" * 2500)  # just uploaded: 500 bytes of room left
    with pytest.raises(UploadSpaceFull):
        budget.reserve(2000)
    assert len(walks) == 1
    for size in (2000, 3000):
        with pytest.raises(UploadSpaceFull, match="try again in a few minutes"):
            budget.reserve(size)
    assert len(walks) == 1 and young.exists()
    clock[0] += ui.uploads.REFUSED_S
    with pytest.raises(UploadSpaceFull):
        budget.reserve(2000)  # a second on: walks again
    assert len(walks) == 2
    budget.reserve(400)  # smaller than the refused: walks, and fits
    assert len(walks) == 3
    budget.arrived(400)  # ended (stored or failed): the next refused size walks again
    with pytest.raises(UploadSpaceFull):
        budget.reserve(2000)
    assert len(walks) == 4


def test_the_views_the_app_draws_keep_the_whole_budget_oldest_first(tmp_path: Path) -> None:
    """Uploads leave a quarter of the budget to the views drawn meanwhile; the app's own writes
    keep the folder within the whole budget (the short soak found 266 MB of 256 with young files
    never pruned)."""
    budget = UploadBudget(lambda: tmp_path, 4000)
    upload = tmp_path / "a" / "upload.png"
    upload.parent.mkdir()
    upload.write_bytes(b"x" * 2500)
    budget.admit(upload)
    view = tmp_path / "v" / "view.webp"
    view.parent.mkdir()
    view.write_bytes(b"x" * 2000)
    budget.added(2000)  # 4500: over, so the oldest goes even though young
    budget.pruned()
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= 4000 and view.exists()


def test_while_a_prune_walks_the_folder_a_small_upload_past_the_count_is_held_at_once(
    tmp_path: Path, held_walk
) -> None:
    """The quiet soak on 1088e46: with the folder at its budget, class uploads of 1 to 3 kB waited
    3.2 to 4.5 s for the prune a view had started (their client gives up at 5 s). The prune ends
    below the budget, so an upload within WALK_OVERDRAFT of it is held meanwhile; a larger one waits."""
    started, go = held_walk
    budget = UploadBudget(lambda: tmp_path, 10_000)
    arrive(tmp_path, "a/old.png", 8_000)
    go.set()
    budget.reserve(1000)  # the first walk: 8,000 there and 1,000 arriving, within LOW_WATER
    budget.added(arrive(tmp_path, "v/view.webp", 1000).stat().st_size)  # 10,000 of 10,000: no room
    go.clear()
    started.clear()
    walk = threading.Thread(target=budget.prune, args=(LOW_WATER,), daemon=True)
    walk.start()
    assert started.wait(10)
    overdraft = int(WALK_OVERDRAFT * 10_000)  # 200 bytes
    assert finishes(lambda: budget.reserve(overdraft))  # held at once, past the budget by the overdraft
    large = threading.Thread(target=budget.reserve, args=(1,), daemon=True)
    large.start()
    large.join(0.5)
    assert large.is_alive()  # one byte more waits for the walk
    go.set()
    walk.join(10)
    large.join(10)
    assert not large.is_alive()
