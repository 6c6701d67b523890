"""A whole class (issue 59's browser test), in order, on `python app.py --present`: a teacher's page on a
1280 x 720 projector picks the cat and starts a class; three students join, one by the join address, one
by typing the code on the page, one a 390 x 844 phone by the address the QR code encodes; all follow the
teacher's layer, query patch and the head pointed at (the heads' picture equal to the teacher's at every
cell on every page, the phone's wrapped tiles included), the teacher's More view and lesson 1 at its
step (the teacher's picture, the same pixels); one student breaks away and comes back; one reloads and
is the same pseudonym; Freeze and Eyes on me bring pages back; the gallery: a question, two students
send, the teacher approves one and hides the other, shows it, spotlights it (every page on that
picture) and exports the handout as a PNG; the end of the class reaches all three."""

import io
import re

from page_helpers import assert_pages_same_at_every_cell
from PIL import Image
from test_ui_browser import (
    LAYER,
    PHONE,
    browser,
    class_started,
    click_patch,
    follow_the_head_more_view_and_lesson,
    open_page,
    patient_expect,
    send_a_picture,
)

from ui.class_route import qr_rows

__all__ = ["browser", "patient_expect"]  # the fixtures, used by name

# The dark modules of the QR code a page painted (ui/js/classview.paintQr: `n` modules a side with its quiet
# zone of 4), read at each module's centre, as rows of "1" dark and "0" (ui.class_route.qr_rows).
QR_MODULES = """(canvas, n) => { const cell = canvas.width / n, width = canvas.width;
  const d = canvas.getContext("2d").getImageData(0, 0, width, width).data, rows = [];
  const at = (k) => Math.floor((k + 0.5) * cell);
  for (let y = 4; y < n - 4; y++) { let row = "";
    for (let x = 4; x < n - 4; x++) row += d[4 * (at(y) * width + at(x))] < 128 ? "1" : "0";
    rows.push(row); }
  return rows; }"""


def qr_address(teacher) -> str:
    """The join address the teacher's QR code encodes: the address shown beside it, whose code is the one painted."""
    address = teacher.locator(".class-join").get_attribute("href")
    rows = qr_rows(address)
    assert teacher.locator("#class-qr").evaluate(QR_MODULES, len(rows) + 8) == rows
    return address


def all_follow(teacher, students) -> None:
    """Every student's head maps say what the teacher's say and show the same colour at every cell."""
    from playwright.sync_api import expect

    said = teacher.locator("#heads img").get_attribute("alt")
    for student in students:
        expect(student.locator("#heads img")).to_have_attribute("alt", said)
        assert_pages_same_at_every_cell(student, teacher)


def step_layer(teacher, layer: int) -> None:
    """The teacher's layer one down, by the slider's key, to `layer`."""
    from playwright.sync_api import expect

    teacher.get_by_label(f"range slider for {LAYER}").press("ArrowLeft")
    expect(teacher.locator("#heads img")).to_have_attribute("alt", re.compile(f"layer {layer} of 6"))


def join_by_typing(browser, server: str, code: str):
    """A student who opened the app without the code types it on the page."""
    from playwright.sync_api import expect

    student = open_page(browser, server)
    student.wait_for_function("() => window.classroom && window.classroom.panel")  # its module attached
    student.locator("#class-typed-code").fill(code)
    student.locator("#class-join-code").click()
    expect(student.locator(".class-banner")).to_contain_text("You follow the teacher's screen")
    return student


def gallery(teacher, students, tmp_path) -> None:
    """A question; the first student sends a picture of their own, the phone the picture its page shows; the
    teacher approves the first, hides the phone's, shows the gallery (on every page), spotlights the first
    (every page moves to its analysis, equal at every cell) and exports the handout."""
    from playwright.sync_api import expect

    asks = teacher.locator("#class-gallery")
    asks.locator(".cg-question").fill("Find a picture where the model looks at the background")
    asks.locator(".cg-ask").click()
    for student in students:
        expect(student.locator("#class-gallery .cg-asked")).to_have_text(
            "The teacher asks: Find a picture where the model looks at the background"
        )
    own, phone = students[0].locator("#class-gallery"), students[2].locator("#class-gallery")
    send_a_picture(own, tmp_path)
    expect(asks.locator(".cg-count")).to_have_text("1 of 3 students answered: 1 waiting for your approval.")
    asks.locator(".cg-waiting button", has_text="Approve").click()  # the first student's
    expect(asks.locator(".cg-count")).to_have_text("1 of 3 students answered: 0 waiting for your approval.")
    phone.locator(".cg-send-view").click()
    expect(phone.locator(".cg-sent")).to_contain_text("Your picture is sent")
    expect(asks.locator(".cg-count")).to_have_text("2 of 3 students answered: 1 waiting for your approval.")
    asks.locator(".cg-waiting button", has_text="Hide").click()  # the phone's: never shown
    expect(asks.locator(".cg-count")).to_have_text("2 of 3 students answered: 0 waiting for your approval.")
    asks.locator(".cg-show").click()
    for page in (teacher, *students):
        expect(page.locator("#class-gallery .cg-tiles figure img")).to_have_count(1)
    before = teacher.evaluate("() => window.attentionMaps.data.handle")
    asks.locator(".cg-tiles button", has_text="Spotlight").click()
    teacher.wait_for_function(f"() => window.attentionMaps.data && window.attentionMaps.data.handle !== {before!r}")
    expect(teacher.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS"))
    all_follow(teacher, students)  # every page on the spotlit picture
    with teacher.expect_download() as download:
        asks.locator(".cg-export").click()
    handout = Image.open(io.BytesIO(download.value.path().read_bytes()))
    assert download.value.suggested_filename == "class-gallery.png" and handout.format == "PNG"


def test_a_whole_class_follows_the_teacher_from_start_to_end(present_server, browser, tmp_path):
    from playwright.sync_api import expect

    teacher, code = class_started(browser, present_server)
    by_link = open_page(browser, f"{present_server}?class={code.text_content()}")
    by_code = join_by_typing(browser, present_server, code.text_content())
    phone = open_page(browser, qr_address(teacher), PHONE)
    students = [by_link, by_code, phone]
    expect(teacher.locator(".class-count")).to_contain_text(f"3 students in class {code.text_content()}")
    all_follow(teacher, students)  # the teacher's image, layer 6, the CLS token's query
    step_layer(teacher, 5)
    all_follow(teacher, students)
    click_patch(teacher, 3, 4)  # the teacher's query patch
    expect(teacher.locator("#heads img")).to_have_attribute("alt", re.compile("for the query patch"))
    all_follow(teacher, students)
    follow_the_head_more_view_and_lesson(teacher, students, code.text_content())

    click_patch(by_link, 2, 3)  # a query of the student's own: exploring on their own
    expect(by_link.locator(".class-banner")).to_contain_text("exploring on your own")
    step_layer(teacher, 4)
    all_follow(teacher, students[1:])
    expect(by_link.locator("#heads img")).to_have_attribute("alt", re.compile("layer 5 of 6"))  # not while away
    by_link.locator("#class-follow").click()  # back to the teacher's view
    expect(by_link.locator("#class-follow")).to_be_hidden()
    all_follow(teacher, students)

    banner = by_code.locator(".class-banner").text_content()
    assert re.search(r" as \w.+\.$", banner), banner  # its pseudonym
    by_code.reload()  # the same student, by the token the page kept, at the teacher's view
    expect(by_code.locator(".class-banner")).to_have_text(banner)
    all_follow(teacher, students)
    expect(teacher.locator(".class-count")).to_contain_text("3 students in class")  # no fourth

    teacher.locator("#class-freeze").click()
    expect(by_link.locator(".class-banner")).to_contain_text("frozen the screens")
    click_patch(by_link, 2, 3)  # frozen: the page snaps back to the teacher's view
    expect(by_link.locator(".class-notice")).to_contain_text("frozen the class's screens")
    all_follow(teacher, students)
    teacher.locator("#class-freeze").click()  # released
    expect(by_link.locator(".class-banner")).not_to_contain_text("frozen")
    for student in (by_link, by_code):
        click_patch(student, 2, 3)
        expect(student.locator("#class-follow")).to_be_visible()
    teacher.locator("#class-eyes").click()  # Eyes on me: every page back to the teacher's view
    for student in students:
        expect(student.locator(".class-notice")).to_contain_text("Eyes on the teacher's screen")
        expect(student.locator("#class-follow")).to_be_hidden()
    all_follow(teacher, students)

    gallery(teacher, students, tmp_path)
    teacher.locator("#class-end").click()
    for student in students:
        expect(student.locator(".class-notice")).to_have_text("The teacher ended the class.")
        expect(student.locator("#class-gallery")).to_be_hidden()
    for page in (teacher, *students):
        page.close()
