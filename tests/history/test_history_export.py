"""HTML and Markdown exports, the shared palette, and records built from engine events."""

import re
from html.parser import HTMLParser

from app.history import ConversationInfo, StoredMessage, StoredToken, to_html, to_markdown
from app.history.palette import STATUSES, STYLES, css_declarations

INFO = ConversationInfo(1, "Tokens & <tags>", "Be <brief>.", 1_700_000_000.0, 1_700_000_100.0, 2)
TOKENS = (
    StoredToken(1, "<script>", "accepted", 0, 0.9, 0.8, 1.0),
    StoredToken(2, "alert(1)", "rejected", 0, 0.1, 0.5, 0.2),
    StoredToken(3, " & ", "corrected", 0, 0.5, None, None),
    StoredToken(4, "ünï", "bonus", 1, 0.7, None, None),
    StoredToken(5, "\n🙂", "target", 2, 0.6, None, None),
)
STATS = {
    "new_tokens": 4,
    "seconds": 2.0,
    "alpha": 0.7123,
    "gamma": 4,
    "histogram": [3, 0, 1, 0, 2],
    "target": "SmolLM2-135M",
    "draft": "self",
}
MESSAGES = (
    StoredMessage(10, 1, "user", "What is <b>bold</b> & *this*?", (), {}, False, 1_700_000_010.0),
    StoredMessage(11, 1, "assistant", "<script> & ünï\n🙂", TOKENS, STATS, True, 1_700_000_020.0),
)


class Spans(HTMLParser):
    """Collects (classes, text) of every token span, and refuses any <script> element."""

    def __init__(self):
        super().__init__()
        self.spans: list[tuple[str, str]] = []
        self._open: str | None = None

    def handle_starttag(self, tag, attrs):
        assert tag != "script", "exported text was not escaped"
        cls = dict(attrs).get("class") or ""
        if tag == "span" and cls.startswith("tok "):
            self._open = cls
            self.spans.append((cls, ""))

    def handle_data(self, data):
        if self._open is not None:
            cls, text = self.spans[-1]
            self.spans[-1] = (cls, text + data)

    def handle_endtag(self, tag):
        if tag == "span":
            self._open = None


def test_html_has_every_token_with_its_status_escaped_and_in_order():
    page = to_html(INFO, MESSAGES)
    parser = Spans()
    parser.feed(page)
    legend, answer = parser.spans[: len(STATUSES)], parser.spans[len(STATUSES) :]
    assert [cls for cls, _ in legend] == [f"tok {s}" for s in STATUSES]
    assert answer == [(f"tok {t.status}", t.text) for t in TOKENS]
    assert "&lt;script&gt;" in page and "<script>" not in page
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; *this*" in page  # the user's text, escaped
    assert "<title>Tokens &amp; &lt;tags&gt; · SpecLens</title>" in page
    assert "Be &lt;brief&gt;." in page


def test_html_is_self_contained_with_palette_and_rejected_toggle():
    page = to_html(INFO, MESSAGES)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched from anywhere
    for status in ("accepted", "corrected", "bonus", "rejected"):
        assert f".tok.{status}{{{css_declarations(status)}}}" in page
    assert "#0072B2" in page and "wavy" in page and "dotted" in page and "line-through" in page
    assert (
        'id="show-rejected"' in page and "#show-rejected:checked~main .tok.rejected{display:inline}" in page
    )
    assert "main .tok.rejected{display:none}" in page
    assert "Legend" in page
    assert "interrupted" in page


def test_html_shows_per_message_statistics_and_histogram():
    page = to_html(INFO, MESSAGES)
    for figure in (
        "4 tokens",
        "2.00 s",
        "2.0 tokens/s",
        "α 0.71",
        "γ 4",
        "1 corrected",
        "1 rejected",
        "target: SmolLM2-135M",
    ):
        assert figure in page
    rows = re.findall(
        r'<th scope="row">(\d+)</th><td class="bar"><span style="width:(\d+)%"></span></td><td>(\d+)</td>',
        page,
    )
    assert rows == [("0", "100", "3"), ("1", "0", "0"), ("2", "33", "1"), ("3", "0", "0"), ("4", "67", "2")]


def test_markdown_keeps_each_turn_exact_and_adds_a_statistics_line():
    md = to_markdown(INFO, MESSAGES)
    assert md.startswith("# Tokens & <tags>\n")
    assert "> Be <brief>." in md
    assert "\n### User\n\nWhat is <b>bold</b> & *this*?\n" in md
    assert "\n### Assistant (interrupted)\n\n<script> & ünï\n🙂\n" in md
    stats_line = next(line for line in md.splitlines() if line.startswith("**Statistics:**"))
    assert "4 tokens" in stats_line and "α 0.71" in stats_line and "draft: self" in stats_line
    assert "**Rounds by accepted drafts:** 0: 3 · 1: 0 · 2: 1 · 3: 0 · 4: 2" in md


def test_exports_tolerate_messages_without_statistics_or_tokens():
    bare = StoredMessage(
        12, 1, "assistant", "plain <answer>", (), {"alpha": None, "histogram": "junk"}, False, 0.0
    )
    page = to_html(INFO, [bare])
    assert (
        "plain &lt;answer&gt;" in page
        and 'class="stats"' not in page
        and "histogram" not in page.split("</style>")[1]
    )
    assert "plain <answer>" in to_markdown(INFO, [bare])


def test_palette_covers_exactly_the_engine_statuses():
    from app.engine import Status

    assert set(STATUSES) == {s.value for s in Status} == set(STYLES)
    assert (
        STYLES["accepted"].color,
        STYLES["corrected"].color,
        STYLES["bonus"].color,
        STYLES["rejected"].color,
    ) == ("#0072B2", "#D55E00", "#009E73", "#999999")
    assert STYLES["target"].color is None
    # Distinguishable without colour: no two statuses share underline, weight and strike-through.
    shapes = {(s.underline, s.bold, s.strike) for s in STYLES.values() if s.color is not None}
    assert len(shapes) == 4


def test_stored_token_from_engine_event():
    from app.engine import Status, TokenEvent, TopEntries

    top = TopEntries(p=((3, 0.5),), q=((4, 0.6),), residual=((3, 0.9),))
    corrected = StoredToken.from_event(TokenEvent(token_id=3, status=Status.CORRECTED, round=2, position=1, p=0.5, q=None,
                                                          accept_prob=None, text="é", top=top))
    assert corrected == StoredToken(
        3, "é", "corrected", 2, 0.5, None, None, TopEntries(((3, 0.5),), ((4, 0.6),), ((3, 0.9),))
    )
    assert type(corrected.status) is str
    accepted = StoredToken.from_event(TokenEvent(token_id=7, status=Status.ACCEPTED, round=0, position=0, p=0.9,
                                                         q=0.8, accept_prob=1.0, text="a"))
    assert (accepted.status, accepted.q, accepted.accept_prob, accepted.top) == ("accepted", 0.8, 1.0, None)
