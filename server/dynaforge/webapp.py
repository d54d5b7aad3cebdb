"""The web app: the built single-page app at ``/`` and GraphiQL from the same build at ``/graphql``.

``npm run build`` in ``web/`` (run by ``make setup``) writes ``web/dist``: ``index.html`` and ``graphiql.html``,
content-hashed files under ``assets/`` (each with a gzip copy), and ``persisted-documents.json``, the app's GraphQL
operations, which the server registers as trusted documents (the app sends their ids, not their texts).

* ``/assets/...``: long-lived and immutable (a new build has new names), gzip when the browser takes it;
* any other path without a file extension that is not the API's (``/graphql``, ``/healthz``, ``/export``,
  ``/evaluations``): the app's ``index.html``, never cached, so that client routes such as ``/tasks/qa`` survive a
  reload;
* every page carries a strict Content-Security-Policy: scripts, styles, fonts and connections from this origin only
  (plus its websocket), no inline script, no framing.

Without a build the API runs as ever and ``/`` says how to build the app.
"""

from __future__ import annotations

import html
import logging
import re
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from dynaforge.settings import Settings

log = logging.getLogger(__name__)

# The API's own paths: never answered with the app's page (a typo there must stay a 404, not an HTML page).
API_PREFIXES = ("graphql", "healthz", "export", "evaluations", "assets", "api")

IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"

MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".ttf": "font/ttf",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}

_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")

BUILD_HINT = (
    "The web app has not been built. Run <code>make setup</code> (it builds the app when Node.js and npm are "
    "installed), or <code>cd web &amp;&amp; npm ci &amp;&amp; npm run build</code>, then restart the server."
)


def web_dir(settings: Settings) -> Path | None:
    """The folder of the built app: ``DYNAFORGE_WEB_DIR``, else the app bundled into the package, else the source
    checkout's ``web/dist``; None when none of them holds a build."""
    here = Path(__file__).resolve().parent
    candidates = [settings.web_dir] if settings.web_dir else [here / "webapp", here.parents[1] / "web" / "dist"]
    for folder in candidates:
        if folder is not None and (folder / "index.html").is_file():
            return folder.resolve()
    return None


def manifest_path(settings: Settings) -> Path | None:
    """The built app's trusted-documents manifest, if there is a build."""
    folder = web_dir(settings)
    path = folder / "persisted-documents.json" if folder else None
    return path if path is not None and path.is_file() else None


def security_headers(request: Request, *, graphiql: bool = False) -> dict[str, str]:
    """The headers of every page of the app. GraphiQL's editor (Monaco) writes style elements at run time and its
    stylesheet embeds fonts as data: URLs, so its page alone allows both; scripts stay same-origin everywhere."""
    connect = ["'self'"]
    host = request.headers.get("host", "")
    if _HOST.match(host):  # the websocket of this origin, for browsers where 'self' does not cover ws: (CSP 2)
        connect.append(("wss://" if request.url.scheme == "https" else "ws://") + host)
    style = "'self' 'unsafe-inline'" if graphiql else "'self'"
    font = "'self' data:" if graphiql else "'self'"
    policy = "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            f"style-src {style}",
            "img-src 'self' data:",
            f"font-src {font}",
            f"connect-src {' '.join(connect)}",
            "worker-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
    }


def _page(request: Request, path: Path, *, graphiql: bool = False) -> Response:
    headers = security_headers(request, graphiql=graphiql)
    headers["Cache-Control"] = NO_CACHE
    return FileResponse(path, media_type="text/html; charset=utf-8", headers=headers)


def _hint_page(request: Request, title: str, body: str, status_code: int = 200) -> Response:
    headers = security_headers(request)
    headers["Cache-Control"] = NO_CACHE
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
        f"<body><main><h1>{html.escape(title)}</h1><p>{body}</p>"
        "<p>The GraphQL API is running: POST queries to <code>/graphql</code>; <code>/healthz</code> says how the "
        "server is.</p></main></body></html>"
    )
    return HTMLResponse(text, status_code=status_code, headers=headers)


def _inside(root: Path, relative: str) -> Path | None:
    """``root/relative`` if it is a file inside ``root`` (no ``..``, no links out, no hidden files)."""
    if "\x00" in relative or any(part.startswith(".") for part in relative.split("/") if part):
        return None
    candidate = (root / relative).resolve()
    return candidate if candidate.is_relative_to(root) and candidate.is_file() else None


def _not_found() -> Response:
    return PlainTextResponse("Not Found", status_code=404, headers={"X-Content-Type-Options": "nosniff"})


class WebApp:
    """The endpoints that serve the build; ``folder`` is looked up per request, so a build made while the server
    runs is picked up (a missing one answers the hint page)."""

    def __init__(self, settings: Settings):
        self.settings = settings

    def folder(self) -> Path | None:
        return web_dir(self.settings)

    async def asset(self, request: Request) -> Response:
        folder = self.folder()
        path = _inside(folder / "assets", request.path_params["path"]) if folder else None
        if path is None:
            return _not_found()
        headers = {"Cache-Control": IMMUTABLE, "X-Content-Type-Options": "nosniff", "Vary": "Accept-Encoding"}
        media_type = MEDIA_TYPES.get(path.suffix, "application/octet-stream")
        gz = path.with_name(path.name + ".gz")
        if "gzip" in request.headers.get("accept-encoding", "") and gz.is_file():
            headers["Content-Encoding"] = "gzip"
            return FileResponse(gz, media_type=media_type, headers=headers)
        return FileResponse(path, media_type=media_type, headers=headers)

    async def page(self, request: Request) -> Response:
        """``/`` and every client route: the app's page; a top-level file of the build (the icon) as itself."""
        relative = request.path_params.get("path", "")
        first = relative.split("/", 1)[0]
        if first in API_PREFIXES:
            return _not_found()
        folder = self.folder()
        if folder is None:
            if relative:
                return _hint_page(request, "Not found: the web app is not built", BUILD_HINT, 404)
            return _hint_page(request, "Dynaforge", BUILD_HINT)
        if relative and "/" not in relative and relative not in ("index.html", "graphiql.html"):
            path = _inside(folder, relative)
            if path is not None:
                headers = {"Cache-Control": NO_CACHE, "X-Content-Type-Options": "nosniff"}
                return FileResponse(path, media_type=MEDIA_TYPES.get(path.suffix), headers=headers)
        if "." in relative.rsplit("/", 1)[-1]:
            return _not_found()  # a file that is not there, not a client route
        return _page(request, folder / "index.html")

    def graphiql(self, request: Request) -> Response:
        """GraphiQL from the build (no CDN), or how to build it."""
        folder = self.folder()
        page = folder / "graphiql.html" if folder else None
        if page is None or not page.is_file():
            return _hint_page(request, "GraphiQL is part of the web app", BUILD_HINT)
        return _page(request, page, graphiql=True)
