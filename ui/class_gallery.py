"""Class mode's gallery (issue 59, "Show me yours"): the teacher asks a question, each student sends
a picture (an upload, through Gradio's upload route and its limits as Explore's uploads are, or the
picture their page shows), the teacher approves, hides and spotlights, and "Show the gallery" draws
every approved picture's view in one batched forward pass (explorer/gallery.py, one GPU call).

    POST CLASS_ROUTE/gallery {"code", "key" | "token", "do", ...}, `do` one of
    teacher: ask {"question", "names"?}, close, approve {"id"}, hide {"id"}, picture {"id"} -> JPEG,
             show {"head"?: 1-based or null}, spotlight {"id"}, export -> PNG (a download)
    student: send {"path": Gradio's upload} or {"handle": the analysis the page shows}
    both:    tiles -> {"drawn", "title", "question", "tiles": [{"id", "png" (base64), "caption", "name"?}], "bar"}

The gallery lives on its class (`ui.classroom.Class.gallery`), so it goes when the class goes: at its
end, or by the 2-hour expiry. Bounds (GalleryLimits): one picture a student, at most `pictures`, each
re-encoded small (explorer.gallery.kept_picture) and at most `picture_bytes`, `bytes` a gallery;
`sends` a student a question. A student sees the question, whether they sent, and the tiles the
teacher shows (approved, not hidden); never another's picture before the teacher shows it, nor any name.
"""

from __future__ import annotations

import base64
import io
import secrets
import unicodedata
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image
from starlette.responses import Response

from explorer import gallery
from explorer.canvas import MapStyle
from explorer.catalog import ModelUnavailable
from explorer.explain import ExplanationTooLarge, explain_file
from explorer.images import ImageError, check_image, load_image
from explorer.priority import FORWARD_PASSES

from . import zerogpu
from .classroom import Class, ClassError
from .common import DISPLAYS, UPSAMPLING, Server
from .outputs import UPLOADS, cache_path, upload_folder
from .uploads import UploadRefused, checked_upload

QUESTION_CHARS = 200
PRIVATE = {"Cache-Control": "no-store"}


@dataclass(frozen=True)
class GalleryLimits:
    """What one class's gallery may hold (docs/security.md, "Class mode")."""

    pictures: int = 60  # one a student: a class's students
    picture_bytes: int = 512 * 2**10  # one kept picture (a 448 px JPEG is 30 to 120 KB)
    bytes: int = 8 * 2**20  # a gallery's pictures together; its tiles add less (docs/security.md)
    sends: int = 5  # pictures one student may send to one question (each replaces the last)


@dataclass
class Picture:
    id: str  # what the teacher's page names it by: never the student's token
    name: str
    data: bytes  # explorer.gallery.kept_picture
    approved: bool = False
    hidden: bool = False


@dataclass
class Gallery:
    """One question's gallery: the pictures by student token, and the tiles the last show drew."""

    question: str
    names: bool = False  # the teacher chose to show names (never on the handout)
    open: bool = True
    pictures: dict[str, Picture] = field(default_factory=dict)
    sends: dict[str, int] = field(default_factory=dict)
    drawn: int = 0  # the tiles' version, bumped by each show and each hide of a shown tile: pages ask again
    serial: str = field(default_factory=lambda: secrets.token_urlsafe(6))  # this question's, so a page tells them apart
    tiles: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # id: (PNG, its caption), of the last show
    bar: bytes = b""
    title: str = ""
    files: list[Path] = field(default_factory=list)  # spotlit pictures written for their analysis

    def clear(self) -> None:
        """Every picture gone now (the class ended, or a new question)."""
        self.pictures.clear()
        self.tiles.clear()
        for path in self.files:
            path.unlink(missing_ok=True)
        self.files.clear()

    def by_id(self, picture_id: object) -> Picture:
        found = next((p for p in self.pictures.values() if p.id == picture_id), None)
        if found is None:
            raise ClassError("There is no such picture in the gallery.", 404)
        return found

    def state(self, token: str | None) -> dict[str, Any]:
        """What a page is pushed of the gallery: the teacher's the pictures (ids, approval, names if chosen)."""
        shown = {"question": self.question, "open": self.open, "drawn": self.drawn, "serial": self.serial}
        shown["answered"] = len(self.pictures)
        if token is not None:
            return shown | {"sent": token in self.pictures}
        pictures = [
            {"id": p.id, "approved": p.approved, "hidden": p.hidden} | ({"name": p.name} if self.names else {})
            for p in self.pictures.values()
        ]
        return shown | {"names": self.names, "pictures": pictures}


def clean_question(typed: object) -> str:
    """The question as every page shows it (as text): printable, spaces collapsed, QUESTION_CHARS at most."""
    if not isinstance(typed, str):
        raise ClassError("A gallery's question is a sentence of text.", 400)
    typed = unicodedata.normalize("NFKC", typed[: QUESTION_CHARS * 4])
    kept = "".join(c if c.isprintable() else " " if c.isspace() else "" for c in typed)  # no control characters
    question = " ".join(kept.split())[:QUESTION_CHARS].strip()
    if not question:
        raise ClassError("Type the question the class answers with a picture.", 400)
    return question


def _teacher(token: str | None) -> None:
    if token is not None:
        raise ClassError("Only the class's teacher can do this.", 403)


def _asked(klass: Class) -> Gallery:
    if klass.gallery is None:
        raise ClassError("The teacher has not opened a gallery yet.", 409)
    return klass.gallery


class GalleryAnswers:
    """The gallery's actions for ui/class_route.py, each run in a thread (decoding, the model)."""

    def __init__(self, server: Server, limits: GalleryLimits | None = None) -> None:
        self.server, self.classes, self.limits = server, server.classes, limits or GalleryLimits()

    def answer(self, asked: dict, network: str | None) -> dict | Response:
        do = asked.get("do")
        run = getattr(self, f"do_{do}", None) if isinstance(do, str) and do.isalpha() else None
        if run is None:
            raise ClassError("There is no such gallery action.", 404)
        return run(asked, network)

    def _on(self, asked: dict, network: str | None, change: Any, changes: bool = True) -> Any:
        credentials = asked.get("code"), asked.get("key"), asked.get("token")
        return self.classes.on_class(*credentials, network, change, changes)

    # ---- the teacher ----
    def do_ask(self, asked: dict, network: str | None) -> dict:
        question, names = clean_question(asked.get("question")), asked.get("names") is True

        def ask(klass: Class, token: str | None) -> dict:
            _teacher(token)
            if klass.gallery is not None:
                klass.gallery.clear()
            klass.gallery = Gallery(question, names)
            return {"question": question}

        return self._on(asked, network, ask)

    def do_close(self, asked: dict, network: str | None) -> dict:
        def close(klass: Class, token: str | None) -> dict:
            _teacher(token)
            _asked(klass).open = False
            return {"open": False}

        return self._on(asked, network, close)

    def do_approve(self, asked: dict, network: str | None) -> dict:
        def approve(klass: Class, token: str | None) -> dict:
            _teacher(token)
            _asked(klass).by_id(asked.get("id")).approved = True
            return {"approved": asked.get("id")}

        return self._on(asked, network, approve)

    def do_hide(self, asked: dict, network: str | None) -> dict:
        def hide(klass: Class, token: str | None) -> dict:
            _teacher(token)
            g = _asked(klass)
            picture = g.by_id(asked.get("id"))
            picture.hidden = True  # off the gallery and the teacher's list for this question
            if picture.id in g.tiles:  # every page's gallery changes
                g.drawn += 1
            return {"hidden": picture.id}

        return self._on(asked, network, hide)

    def do_picture(self, asked: dict, network: str | None) -> Response:
        def picture(klass: Class, token: str | None) -> bytes:
            _teacher(token)  # a student never sees another's picture before the teacher shows it
            return _asked(klass).by_id(asked.get("id")).data

        return Response(self._on(asked, network, picture, False), media_type="image/jpeg", headers=PRIVATE)

    def do_tiles(self, asked: dict, network: str | None) -> dict:
        def tiles(klass: Class, token: str | None) -> dict:
            g = _asked(klass)
            shown = [p for p in g.pictures.values() if p.id in g.tiles and p.approved and not p.hidden]
            named = g.names and token is None
            said = [
                {"id": p.id, "png": _b64(g.tiles[p.id][0]), "caption": g.tiles[p.id][1]}
                | ({"name": p.name} if named else {})
                for p in shown
            ]
            return {"drawn": g.drawn, "title": g.title, "question": g.question, "tiles": said, "bar": _b64(g.bar)}

        return self._on(asked, network, tiles, False)

    def do_show(self, asked: dict, network: str | None) -> dict:
        """Every approved, unhidden picture's view, in one batched pass on the teacher's model and layer."""
        head = asked.get("head")
        if not (head is None or (isinstance(head, int) and not isinstance(head, bool) and head >= 1)):
            raise ClassError("The gallery's head is a number from 1, or none for the mean of the heads.", 400)

        def chosen(klass: Class, token: str | None) -> tuple:
            _teacher(token)
            g = _asked(klass)
            pictures = [(p.id, p.data) for p in g.pictures.values() if p.approved and not p.hidden]
            return g, pictures, klass.source, (klass.view or {}).get("layer", 0)

        g, pictures, source, layer = self._on(asked, network, chosen, False)
        if not pictures:
            raise ClassError("Approve a picture first: the gallery shows approved pictures only.", 409)
        loaded = self._model(source)
        layer = min(max(layer, 1), loaded.model.config.depth) - 1 if layer else loaded.model.config.depth - 1
        if head is not None and head > loaded.model.config.heads:
            raise ClassError(f"This model's layers have {loaded.model.config.heads} heads.", 400)
        view = FORWARD_PASSES.run(self._draw, loaded, [data for _, data in pictures], layer, head)

        made = zip(pictures, view.tiles, view.captions, strict=True)
        tiles = {pid: (gallery.png(tile), caption) for (pid, _), tile, caption in made}  # encoded outside the lock
        bar = gallery.png(view.bar)

        def drawn(klass: Class, token: str | None) -> dict:
            if klass.gallery is not g:
                raise ClassError("The teacher asked another question meanwhile.", 409)
            g.tiles, g.bar, g.title, g.drawn = tiles, bar, view.title, g.drawn + 1
            return {"drawn": g.drawn}

        return self._on(asked, network, drawn)

    def _draw(self, loaded: Any, pictures: list[bytes], layer: int, head: int | None) -> gallery.GalleryView:
        tensor, pixels = gallery.batch(loaded, pictures)
        try:
            maps, logits = zerogpu.GALLERY(loaded, tensor, layer, None if head is None else head - 1)
        except gr.Error as e:  # no GPU time left: the platform's words
            raise ClassError(str(e.message), 503) from e
        return gallery.gallery_view(loaded, pixels, maps, logits, layer, None if head is None else head - 1)

    def _model(self, source: str | None) -> Any:
        """The model of the teacher's image (the server's start model before any)."""
        key = self.server.pages.key(source) if source is not None else None
        try:
            return self.server.catalog.get(key.model_key) if key is not None else self.server.catalog.start()
        except ModelUnavailable as e:
            raise ClassError(f"The teacher's model cannot be loaded now: {e}", 503) from e

    def do_spotlight(self, asked: dict, network: str | None) -> dict:
        """One picture becomes the class's view: its analysis, run once, led as the teacher leads."""

        def chosen(klass: Class, token: str | None) -> tuple:
            _teacher(token)
            g = _asked(klass)
            return g, g.by_id(asked.get("id")).data, klass.source, klass.view

        g, data, source, view = self._on(asked, network, chosen, False)
        loaded = self._model(source)
        path = cache_path("class-picture.jpg")  # an analysis is of a file: analysed again from it if dropped
        path.write_bytes(data)
        try:
            key, ex = self._analysed(loaded, path, network)

            def kept(klass: Class, token: str | None) -> None:
                if klass.gallery is not g:
                    raise ClassError("The teacher asked another question meanwhile.", 409)
                g.files.append(path)  # deleted with the class's pictures

            self._on(asked, network, kept, False)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        layer = min((view or {}).get("layer", ex.depth), ex.depth)
        led = {
            "model": loaded.key,
            "layer": layer,
            "query": None,
            "style": (view or {}).get("style", style_words(MapStyle())),
        }
        version = self.classes.lead(
            asked.get("code"), asked.get("key"), led | {"handle": self.server.pages.handle(key)}, network
        )
        return {"version": version}

    def _analysed(self, loaded: Any, path: Path, network: str | None) -> tuple[Any, Any]:
        """The spotlit picture's analysis, as Explore's are made and kept (one forward pass, one GPU call)."""
        try:
            return explain_file(loaded, str(path), "crop", self.server.store, partial(zerogpu.FORWARD, loaded), network)
        except (ImageError, ExplanationTooLarge) as e:
            raise ClassError(_said(e), 400) from e
        except gr.Error as e:  # no GPU time left: the platform's words
            raise ClassError(str(e.message), 503) from e

    def do_export(self, asked: dict, network: str | None) -> Response:
        def shown(klass: Class, token: str | None) -> tuple:
            _teacher(token)
            g = _asked(klass)
            tiles = [g.tiles[p.id][0] for p in g.pictures.values() if p.id in g.tiles and p.approved and not p.hidden]
            return g.question, tiles, g.bar, g.title

        question, tiles, bar, title = self._on(asked, network, shown, False)
        if not tiles:
            raise ClassError("Show the gallery first: the handout holds the tiles it shows.", 409)
        view = gallery.GalleryView([_image(t) for t in tiles], _image(bar), title)
        headers = PRIVATE | {"Content-Disposition": 'attachment; filename="class-gallery.png"'}
        return Response(gallery.png(gallery.handout(question, view)), media_type="image/png", headers=headers)

    # ---- a student ----
    def do_send(self, asked: dict, network: str | None) -> dict:
        """A student's picture: their upload (checked and budgeted as Explore's) or their page's image."""
        try:
            data = gallery.kept_picture(load_image(self._file(asked)))
        except ImageError as e:
            raise ClassError(_said(e), 400) from e
        if len(data) > self.limits.picture_bytes:
            raise ClassError(
                f"This picture is too large for the gallery: at most {self.limits.picture_bytes // 1024} KB.", 413
            )

        def send(klass: Class, token: str | None) -> dict:
            if token is None:
                raise ClassError("The teacher asks; the students send pictures.", 403)
            g = _asked(klass)
            if not g.open:
                raise ClassError("The teacher has closed the gallery: no more pictures for this question.", 409)
            self._check_room(g, token, len(data))
            if (old := g.pictures.pop(token, None)) is not None:
                g.tiles.pop(old.id, None)  # a new picture, under a new id, waits for the teacher again
            g.sends[token] = g.sends.get(token, 0) + 1
            g.pictures[token] = Picture(secrets.token_urlsafe(6), klass.students[token].name, data)
            return {"sent": True}

        return self._on(asked, network, send)

    def _check_room(self, g: Gallery, token: str, size: int) -> None:
        if g.sends.get(token, 0) >= self.limits.sends:
            raise ClassError(
                f"You have sent {self.limits.sends} pictures to this question, the most a student may.", 429
            )
        if token not in g.pictures and len(g.pictures) >= self.limits.pictures:
            raise ClassError(f"The gallery is full: it holds {self.limits.pictures} pictures.", 409)
        others = sum(len(p.data) for t, p in g.pictures.items() if t != token)
        if others + size > self.limits.bytes:
            raise ClassError(f"The gallery is full: its pictures may take {self.limits.bytes // 2**20} MB.", 507)

    def _file(self, asked: dict) -> str:
        """The picture's file: an upload of this app's (ui/uploads.py's checks and budget) or the image
        of an analysis the page was sent (by its handle, the server's own path)."""
        if (handle := asked.get("handle")) is not None:
            key = self.server.pages.key(handle)
            if key is None or not Path(key.path).is_file():
                raise ClassError("The server no longer keeps this image: upload it again.", 404)
            return key.path
        try:
            path = checked_upload(asked.get("path"), upload_folder())
            UPLOADS.admit(path)
            check_image(path)
        except (UploadRefused, ImageError) as e:
            raise ClassError(_said(e), 400) from e
        return str(path)


def style_words(style: MapStyle) -> dict[str, Any]:
    """`style` in the style controls' words, as a class's view holds it (`ui.common.map_style` read back):
    a spotlight before the teacher showed any image leads with Explore's defaults."""
    upsampling, display = UPSAMPLING[style.smooth], DISPLAYS[style.raw]
    return {
        "cmap": style.cmap,
        "opacity": style.opacity,
        "upsampling": upsampling,
        "display": display,
        "scale": style.scale,
    }


def _said(error: Exception) -> str:
    """An explorer or upload message (a lower-case clause) as the sentence a page shows."""
    text = str(error)
    return f"{text[:1].upper()}{text[1:]}."


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _image(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")
