"""The web page at / (src/server/webui/, embedded in the binary): served with
its files and a policy that keeps it from loading anything from elsewhere,
reachable without an API key, and gone with --no-webui."""
import re
import urllib.error
import urllib.request

import pytest

from conftest import serving

def get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_page_and_its_files_are_served(cohort_server):
    status, headers, body = get(cohort_server + "/")
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert body.lstrip().lower().startswith("<!doctype html>")
    # Everything the page links is one of its own files, served with the
    # type its extension says; nothing comes from another host.
    links = [u for u in re.findall(r'(?:src|href)="([^"]+)"', body) if not u.startswith("data:")]
    assert not [u for u in links if "//" in u], links
    for link in links:
        s, h, _ = get(cohort_server + link)
        assert s == 200, link
        ext = link.rsplit(".", 1)[-1]
        assert h["Content-Type"].startswith({"js": "text/javascript", "css": "text/css",
                                              "svg": "image/svg+xml", "png": "image/png"}[ext]), link
    s, _, same = get(cohort_server + "/index.html")
    assert s == 200 and same == body


def test_no_webui_answers_404(cohort_bin, default_model, tmp_path):
    with serving(cohort_bin, default_model, ["-c", "512", "--no-webui"], tmp_path) as url:
        assert get(url + "/")[0] == 404
        assert get(url + "/index.html")[0] == 404
        assert get(url + "/health")[0] == 200


def test_page_needs_no_api_key_but_the_api_does(cohort_bin, default_model, tmp_path):
    with serving(cohort_bin, default_model, ["-c", "512", "--api-key", "k1"], tmp_path) as url:
        assert get(url + "/")[0] == 200
        assert get(url + "/props")[0] == 401
        assert get(url + "/props", {"Authorization": "Bearer k1"})[0] == 200
