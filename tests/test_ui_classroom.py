"""Class mode's registry (ui/classroom.py, issue 59): codes and keys no one guesses, its limits, a
rate limit on wrong codes and keys per network, only the teacher leads or ends, one class sees
nothing of another, names shown as text, the state gone at once when the class ends or its
teacher has been away for two hours."""

import base64
import re
from pathlib import Path

import pytest

from explorer.prompts import MAX_PROMPTS
from ui.classroom import (
    ADJECTIVES,
    ALPHABET,
    ALT_CHARS,
    ANIMALS,
    CODE_CHARS,
    LESSON_MAPS,
    NAME_CHARS,
    SAID_ITEMS,
    TABLE_CELLS,
    TABLE_ROWS,
    TABLES,
    TEXT_CHARS,
    ClassError,
    ClassLimits,
    Classroom,
    checked_view,
    clean_code,
    clean_name,
)
from ui.limits import MAX_EVENT_BYTES

ROOT = Path(__file__).resolve().parents[1]
TEACHER, SCHOOL, ATTACKER = "198.51.100.7", "198.51.100.9", "203.0.113.66"
VIEW = {
    "handle": "teacher-handle",
    "model": "bundled",
    "layer": 3,
    "query": {"row": 1, "col": 2},
    "style": {"cmap": "inferno", "opacity": 0.6, "upsampling": "nearest", "display": "overlay", "scale": "layer"},
    "head": None,
    "more": None,
    "lesson": None,
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def classroom(**limits) -> tuple[Classroom, Clock, dict[str, list[str]]]:
    """A registry on a clock the test moves, which records what it grants and revokes."""
    clock, handed = Clock(), {"granted": [], "revoked": []}

    def grant(handle: str) -> str | None:
        if handle == "unknown":
            return None
        handed["granted"].append(f"followers-of-{handle}")
        return handed["granted"][-1]

    return Classroom(ClassLimits(**limits), clock, grant, handed["revoked"].append), clock, handed


def test_a_code_is_six_characters_without_look_alikes_and_a_key_128_random_bits():
    classes, _, _ = classroom(classes=300, per_network=300)
    started = [classes.start(TEACHER) for _ in range(300)]
    codes = {code for code, _ in started}
    assert len(codes) == 300 and all(len(code) == CODE_CHARS and set(code) <= set(ALPHABET) for code in codes)
    assert not set(ALPHABET) & set("0O1IL5S2Z8B")
    keys = [key for _, key in started]
    assert len(set(keys)) == 300 and all(len(base64.urlsafe_b64decode(key + "==")) == 16 for key in keys)
    # the registry keeps no key, only its digest
    assert all(key not in repr(vars(classes.classes[code])) for code, key in started)
    # a code as a student types it
    code = started[0][0]
    assert clean_code(f" {code[:3].lower()}-{code[3:]} ") == code and clean_code("OOOOOO") is None


def test_a_server_holds_a_few_classes_a_network_two_and_a_class_sixty_students():
    classes, _, _ = classroom(classes=3, per_network=2, students=60)
    code, _ = classes.start(TEACHER)
    classes.start(TEACHER)
    with pytest.raises(ClassError, match="already runs 2 classes") as refused:
        classes.start(TEACHER)
    assert refused.value.status == 429
    classes.start(SCHOOL)
    with pytest.raises(ClassError, match="as many classes as it can") as full:
        classes.start("192.0.2.1")
    assert full.value.status == 503
    tokens = {classes.join(code, SCHOOL)[0] for _ in range(60)}
    assert len(tokens) == 60
    with pytest.raises(ClassError, match="full: it has 60 students") as crowded:
        classes.join(code, SCHOOL)
    assert crowded.value.status == 409
    with pytest.raises(ClassError, match="--max-classes 0"):
        classroom(classes=0)[0].start(TEACHER)


def test_wrong_codes_and_keys_are_rate_limited_per_network():
    classes, clock, _ = classroom(failures=20, window_s=600)
    code, key = classes.start(TEACHER)
    wrong = next(c for c in ("MMMMMM", "NNNNNN") if c != code)
    for _ in range(19):
        with pytest.raises(ClassError, match="no class with the code") as missing:
            classes.join(wrong, ATTACKER)
        assert missing.value.status == 404
    with pytest.raises(ClassError, match="Only the class's teacher"):
        classes.lead(code, "forged", VIEW, ATTACKER)  # the 20th refusal: a forged key counts too
    with pytest.raises(ClassError, match="Too many wrong class codes") as limited:
        classes.join(code, ATTACKER)  # even the right code, until the window passes
    assert limited.value.status == 429
    assert classes.join(code, SCHOOL)[1]  # another network is not held back
    clock.now += 601
    assert classes.join(code, ATTACKER)[1]


def test_wrong_codes_from_the_classs_own_network_never_lock_its_teacher_or_students_out():
    """`bench.attacks` ("a student's forged teacher actions"): a student sent 20 forged keys from the
    class's own network (a school behind one router) and every request of that network was refused for
    10 minutes: the teacher could not lead, no page could reopen its stream. Credentials a guess never
    finds (the key, a student's token: 128 random bits each) still pass; a code alone (a new student's
    join) and every wrong credential get the same refusal, so the lock tells a guesser nothing."""
    classes, _, _ = classroom(failures=20, window_s=600)
    code, key = classes.start(SCHOOL)
    token, name = classes.join(code, SCHOOL)
    for _ in range(20):
        with pytest.raises(ClassError, match="Only the class's teacher"):
            classes.lead(code, token, VIEW, SCHOOL)
    assert classes.lead(code, key, VIEW, SCHOOL) == 2  # the teacher leads, Freezes and ends as before
    assert classes.command(code, key, "freeze", SCHOOL) == 3
    assert classes.open_stream(classes.ticket(code, None, token, SCHOOL)) == (code, token)
    assert classes.join(code, SCHOOL, token=token) == (token, name)  # a reload rejoins
    assert classes.open_stream(classes.ticket(code, key, None, SCHOOL)) == (code, None)
    refusals = [
        lambda: classes.join(code, SCHOOL),  # a new student: a code alone proves nothing
        lambda: classes.lead(code, token, VIEW, SCHOOL),
        lambda: classes.ticket(code, None, "made-up", SCHOOL),
        lambda: classes.join("MMMMMM" if code != "MMMMMM" else "NNNNNN", SCHOOL, token=token),
    ]
    for refused in refusals:
        with pytest.raises(ClassError, match="Too many wrong class codes") as limited:
            refused()
        assert limited.value.status == 429


def test_a_member_holds_a_few_unopened_tickets_and_another_class_always_gets_one():
    """`bench.attacks` ("600 stream tickets"): one teacher's page asked 488 tickets and opened none,
    and every page of every other class was refused its stream for 30 s ("Too many pages are opening
    the class's stream"). A member's tickets beyond its streams' number replace its oldest."""
    classes, _, _ = classroom(streams=3)
    code, key = classes.start(ATTACKER)
    hoarded = [classes.ticket(code, key, None, ATTACKER) for _ in range(600)]
    other, _ = classes.start(SCHOOL)
    token, _ = classes.join(other, SCHOOL)
    assert classes.open_stream(classes.ticket(other, None, token, SCHOOL)) == (other, token)
    assert len(classes.tickets) <= 4
    with pytest.raises(ClassError, match="ticket is not valid"):
        classes.open_stream(hoarded[0])
    assert [classes.open_stream(t) for t in hoarded[-3:]] == [(code, None)] * 3


def test_the_operators_line_counts_what_the_classes_hold_and_an_ended_class_holds_nothing():
    classes, _, _ = classroom()
    code, key = classes.start(TEACHER)
    tokens = [classes.join(code, SCHOOL)[0] for _ in range(3)]
    classes.open_stream(classes.ticket(code, None, tokens[0], SCHOOL))
    classes.open_stream(classes.ticket(code, key, None, TEACHER))
    assert classes.held() == "1 classes (3 students, 2 streams open, 0 gallery pictures)"
    classes.end(code, key, TEACHER)
    assert classes.held() == "0 classes (0 students, 0 streams open, 0 gallery pictures)"


def test_a_student_can_never_lead_freeze_or_end_and_a_forged_key_changes_nothing():
    classes, _, _ = classroom()
    code, key = classes.start(TEACHER)
    token, _ = classes.join(code, SCHOOL)
    version = classes.lead(code, key, VIEW, TEACHER)
    for forged in (token, "", None, key[:-1] + ("A" if key[-1] != "A" else "B")):
        with pytest.raises(ClassError, match="Only the class's teacher") as refused:
            classes.lead(code, forged, {**VIEW, "layer": 9}, SCHOOL)
        assert refused.value.status == 403
        with pytest.raises(ClassError, match="Only the class's teacher"):
            classes.command(code, forged, "freeze", SCHOOL)
        with pytest.raises(ClassError, match="Only the class's teacher"):
            classes.end(code, forged, SCHOOL)
    state = classes.snapshot(code, token)
    assert state["version"] == version and state["view"]["layer"] == 3 and not state["frozen"]
    assert state["role"] == "student" and "names" not in state  # a student is not sent the others' names


def test_a_second_class_sees_nothing_of_the_first():
    classes, _, _ = classroom()
    first, first_key = classes.start(TEACHER)
    second, second_key = classes.start(SCHOOL)
    mine, _ = classes.join(first, TEACHER, "Ada")
    theirs, _ = classes.join(second, SCHOOL, "Grace")
    classes.lead(first, first_key, VIEW, TEACHER)
    for asks in (
        lambda: classes.ticket(first, None, theirs, SCHOOL),
        lambda: classes.followed(first, None, theirs, SCHOOL),
        lambda: classes.lead(first, second_key, VIEW, SCHOOL),
        lambda: classes.end(first, second_key, SCHOOL),
    ):
        with pytest.raises(ClassError) as refused:
            asks()
        assert refused.value.status == 403
    state = classes.snapshot(second, None)
    assert state["view"] is None and state["names"] == ["Grace"] and state["students"] == 1
    assert classes.followed(first, None, mine, TEACHER)["handle"] == "followers-of-teacher-handle"


@pytest.mark.parametrize(
    "typed, shown",
    [
        ("<img src=x onerror=alert(1)>", "img srcx onerroralert1"),
        ("**Bold** [link](http://e.x) `code` _it_", "Bold linkhttpe.x code it"),
        ("  Zoë   O'Neil-Smith  ", "Zoë O'Neil-Smith"),
        ("a" * 200, "a" * NAME_CHARS),
        ("<>*[]", None),
    ],
)
def test_a_typed_name_keeps_letters_digits_and_a_few_marks_only(typed, shown):
    assert clean_name(typed) == shown


def test_students_get_pseudonyms_and_a_token_rejoins_as_the_same_student():
    classes, _, _ = classroom()
    code, _ = classes.start(TEACHER)
    token, name = classes.join(code, SCHOOL, "<b>x</b>")
    assert name == "bxb"
    _, pseudonym = classes.join(code, SCHOOL)
    adjective, animal = pseudonym.split(" ")
    assert adjective in ADJECTIVES and animal in ANIMALS
    assert classes.join(code, SCHOOL, "Someone else", token) == (token, "bxb")  # a reload: the same student
    assert classes.join(code, SCHOOL, "bxb")[1] == "bxb 2"
    assert classes.snapshot(code, None)["students"] == 3


def test_the_teachers_view_grants_the_followers_one_handle_per_image_and_takes_it_back():
    classes, _, handed = classroom()
    code, key = classes.start(TEACHER)
    token, _ = classes.join(code, SCHOOL)
    classes.lead(code, key, VIEW, TEACHER)
    classes.lead(code, key, {**VIEW, "layer": 4}, TEACHER)  # a click: the same image, no new handle
    assert handed == {"granted": ["followers-of-teacher-handle"], "revoked": []}
    assert classes.snapshot(code, token)["view"] == {**VIEW, "layer": 4, "handle": "followers-of-teacher-handle"}
    # a reloaded teacher's page shows the class's analysis by the followers' handle: no new one
    classes.lead(code, key, {**VIEW, "handle": "followers-of-teacher-handle"}, TEACHER)
    assert len(handed["granted"]) == 1 and classes.snapshot(code, token)["view"]["handle"] == handed["granted"][0]
    classes.lead(code, key, {**VIEW, "handle": "next-image"}, TEACHER)
    assert handed == {"granted": ["followers-of-teacher-handle", "followers-of-next-image"],
                      "revoked": ["followers-of-teacher-handle"]}  # fmt: skip
    with pytest.raises(ClassError, match="no longer keeps") as dropped:
        classes.lead(code, key, {**VIEW, "handle": "unknown"}, TEACHER)
    assert dropped.value.status == 404
    for bad in (
        None,
        {**VIEW, "layer": "3"},
        {**VIEW, "query": {"row": 1}},
        {**VIEW, "style": {}},
        {**VIEW, "model": 1},
    ):
        with pytest.raises(ClassError, match="must say its handle"):
            checked_view(bad)


def test_the_teachers_view_names_the_head_pointed_at_the_more_view_and_the_lesson_open():
    """Issue 59's Follow: the head the teacher points at (1-based, or none), the "More views" view and
    the lesson open (each its name, its picture's words, where the teacher's page got it) are the view's;
    anything else is refused in a sentence. A page of before (no head, no More view, no lesson) points
    at none and opens none."""
    more = {"view": "rollout", "alt": "Attention rollout of the image", "picture": "vit-explorer/ab/view.webp"}
    lesson = {"view": "Which heads matter", "alt": "", "picture": ""}  # a lesson with no picture (yet)
    shown = {**VIEW, "head": 5, "more": more, "lesson": lesson}
    assert checked_view(shown) == shown
    assert checked_view({k: v for k, v in VIEW.items() if k not in ("head", "more", "lesson")}) == VIEW
    assert checked_view({**VIEW, "more": {**more, "alt": "x" * 5000}})["more"]["alt"] == "x" * 600
    for head in (0, -1, "5", True, 5.0):
        with pytest.raises(ClassError, match="head a teacher points at"):
            checked_view({**VIEW, "head": head})
    for bad in ("rollout", {**more, "view": None}, {**more, "extra": 1}, {"view": "pca"}):
        for kind in ("more", "lesson"):
            with pytest.raises(ClassError, match="More view or lesson must say"):
                checked_view({**VIEW, kind: bad})


def test_a_lessons_words_its_choices_and_results_as_text_are_the_views_and_bounded():
    """Lessons 3 and 4 have no one picture: the teacher's page sends its choices and notes as [name, words]
    and its results as tables of text, which the view keeps as sent; more of them than a view holds, a cell
    that is no short text, or a shape of anything else is refused in a sentence (a view stays small)."""
    said = [["Model (with classes)", "CIFAR-10 nano (bundled)"], ["", "Heads off: 1.1. The model says cat."]]
    top5 = {"caption": "Top-5 with these heads off", "rows": [["cat", "91%"], ["dog", "4%"]]}
    lesson = {"view": "Which heads matter", "alt": "", "picture": "", "said": said, "tables": [top5]}
    assert checked_view({**VIEW, "lesson": lesson})["lesson"] == lesson
    assert checked_view({**VIEW, "lesson": {**lesson, "tables": []}})["lesson"]["tables"] == []
    row, text = ["1", "3.2", "0.41"], "x" * (TEXT_CHARS + 1)
    for bad in (
        [["a", "b"]] * (SAID_ITEMS + 1),
        [["a"]],
        [["a", 1]],
        [["a", "x" * (ALT_CHARS + 1)]],
        [[text, "b"]],
        "Model: CIFAR",
    ):
        with pytest.raises(ClassError, match="names and their words"):
            checked_view({**VIEW, "lesson": {**lesson, "said": bad}})
    for bad in (
        [top5] * (TABLES + 1),
        [{"caption": "Ranking", "rows": [row] * (TABLE_ROWS + 1)}],
        [{"caption": "Ranking", "rows": [row + ["x"] * TABLE_CELLS]}],
        [{"caption": "Ranking", "rows": [[text]]}],
        [{"caption": "Ranking", "rows": [[1]]}],
        [{"caption": "Ranking", "rows": row, "html": "<b>"}],
    ):
        with pytest.raises(ClassError, match="few short tables of words"):
            checked_view({**VIEW, "lesson": {**lesson, "tables": bad}})
    with pytest.raises(ClassError, match="More view or lesson must say"):
        checked_view({**VIEW, "lesson": {"said": said}})  # words, but no lesson named
    with pytest.raises(ClassError, match="More view or lesson must say"):
        checked_view({**VIEW, "more": lesson})  # a More view says no words of its own


def test_lesson_4s_word_maps_are_the_views_each_a_picture_with_its_words_and_bounded():
    """Lesson 4's word maps (a gallery, one picture a word): the teacher's page sends each map's alt text and
    where it got it, which the view keeps as sent, as many as the lesson draws words (explorer.prompts.MAX_PROMPTS);
    more, a map without its picture or with words too long, or of another shape, is refused in a sentence."""
    assert LESSON_MAPS == MAX_PROMPTS
    maps = [
        {"alt": f"Relevance of each patch for the words 'a cat {i}'", "picture": f"/vit-explorer/{i}.webp"}
        for i in range(3)
    ]
    said = [["Model (CLIP)", "ViT-B/16 CLIP"]]
    lesson = {"view": "One picture, many words", "alt": "", "picture": "", "said": said, "tables": [], "maps": maps}
    assert checked_view({**VIEW, "lesson": lesson})["lesson"] == lesson
    assert checked_view({**VIEW, "lesson": {**lesson, "maps": maps * 2 + maps[:2]}})["lesson"]["maps"][7] == maps[1]
    one = maps[0]
    for bad in (
        maps * 3,  # 9 maps
        [{**one, "picture": ""}],
        [{**one, "alt": "x" * (ALT_CHARS + 1)}],
        [{**one, "picture": "p" * (TEXT_CHARS + 1)}],
        [{**one, "caption": "<b>"}],
        [{"picture": one["picture"]}],
        [one["picture"]],
        one,
    ):
        with pytest.raises(ClassError, match="word maps must be a few pictures"):
            checked_view({**VIEW, "lesson": {**lesson, "maps": bad}})


def test_freeze_and_eyes_on_me_are_pushed_as_new_versions():
    classes, _, _ = classroom()
    code, key = classes.start(TEACHER)
    token, _ = classes.join(code, SCHOOL)
    before = classes.snapshot(code, token)
    classes.command(code, key, "freeze", TEACHER)
    classes.command(code, key, "eyes", TEACHER)
    after = classes.snapshot(code, token)
    assert after["frozen"] and after["eyes"] == before["eyes"] + 1 and after["version"] == before["version"] + 2
    classes.command(code, key, "release", TEACHER)
    assert not classes.snapshot(code, token)["frozen"]
    with pytest.raises(ClassError, match="freeze, release or eyes"):
        classes.command(code, key, "reboot", TEACHER)


def test_ending_deletes_the_class_at_once_and_revokes_the_followers_handle():
    classes, _, handed = classroom()
    code, key = classes.start(TEACHER)
    token, _ = classes.join(code, SCHOOL)
    classes.lead(code, key, VIEW, TEACHER)
    classes.end(code, key, TEACHER)
    assert code not in classes.classes and handed["revoked"] == ["followers-of-teacher-handle"]
    with pytest.raises(ClassError, match="The teacher ended the class") as ended:
        classes.snapshot(code, token)
    assert ended.value.status == 410
    with pytest.raises(ClassError, match="no class with the code"):
        classes.join(code, SCHOOL, token=token)


def test_a_class_ends_itself_two_hours_after_its_teacher_left():
    classes, clock, _ = classroom()
    kept, kept_key = classes.start(TEACHER)
    left, _ = classes.start(TEACHER)
    stream = classes.open_stream(classes.ticket(kept, kept_key, None, TEACHER))  # the teacher's page is open
    clock.now += 2 * 3600 + 1
    with pytest.raises(ClassError, match="its teacher was away for two hours"):
        classes.snapshot(left, None)
    assert classes.snapshot(kept, None)["code"] == kept
    classes.close_stream(*stream)  # the teacher's page closes: two more hours
    clock.now += 2 * 3600 - 1
    assert classes.snapshot(kept, None)["code"] == kept
    clock.now += 2
    with pytest.raises(ClassError, match="away for two hours"):
        classes.snapshot(kept, None)


def test_a_ticket_opens_one_stream_once_and_a_member_holds_few_streams():
    classes, clock, _ = classroom(streams=2, ticket_s=30)
    code, _ = classes.start(TEACHER)
    token, _ = classes.join(code, SCHOOL)
    ticket = classes.ticket(code, None, token, SCHOOL)
    assert classes.open_stream(ticket) == (code, token)
    with pytest.raises(ClassError, match="ticket is not valid"):
        classes.open_stream(ticket)  # once only
    late = classes.ticket(code, None, token, SCHOOL)
    clock.now += 31
    with pytest.raises(ClassError, match="ticket is not valid"):
        classes.open_stream(late)
    classes.open_stream(classes.ticket(code, None, token, SCHOOL))
    with pytest.raises(ClassError, match="too many tabs") as crowded:
        classes.open_stream(classes.ticket(code, None, token, SCHOOL))
    assert crowded.value.status == 429


def test_the_pages_bounds_of_a_lessons_words_are_the_registrys():
    """ui/js/classresult.js cuts a lesson's words to the bounds `checked_lesson` keeps: the same numbers, so a
    teacher's page never sends a view the registry refuses for a long note or table."""
    bounds = re.search(r"export const BOUNDS = \{([^}]*)\}", (ROOT / "ui/js/classresult.js").read_text())
    page = {name: int(value) for name, value in re.findall(r"(\w+): (\d+)", bounds[1])}
    kept = {"said": SAID_ITEMS, "tables": TABLES, "rows": TABLE_ROWS, "cells": TABLE_CELLS, "maps": LESSON_MAPS}
    assert page | kept | {"text": TEXT_CHARS, "words": ALT_CHARS} == page and page["bytes"] < MAX_EVENT_BYTES - 2000
