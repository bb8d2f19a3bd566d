"""Output capping and cleaning, and the shell protocol's framing, without any shell."""

from __future__ import annotations

import json
import subprocess

import pytest

from sandbox.output import CappedOutput, clean_text
from sandbox.shell import MarkerReader, quote

SEQ = "".join(f"{n}\n" for n in range(1, 20_001)).encode()


@pytest.mark.parametrize("chunk", [1, 7, 4096, len(SEQ)])
def test_capped_output_keeps_head_and_tail_and_counts_the_cut(chunk: int) -> None:
    output = CappedOutput(head=1000, tail=500)
    for start in range(0, len(SEQ), chunk):
        output.write(SEQ[start : start + chunk])
    assert output.cut == len(SEQ) - 1500
    head, notice, tail = output.text().partition(
        f"\n[... {len(SEQ) - 1500} bytes of output cut ...]\n"
    )
    assert notice
    assert head == SEQ[:1000].decode()
    assert tail == SEQ[-500:].decode()


def test_short_output_is_kept_whole() -> None:
    output = CappedOutput(head=1000, tail=1000)
    output.write(SEQ[:1500])
    assert output.cut == 0
    assert output.text() == SEQ[:1500].decode()


def test_zero_tail_keeps_only_the_head() -> None:
    output = CappedOutput(head=10, tail=0)
    output.write(b"0123456789abcdef")
    assert output.cut == 6
    assert output.text().startswith("0123456789\n[... 6 bytes")


def test_clean_text_makes_any_bytes_json_safe() -> None:
    data = bytes(range(256)) * 4 + b"\x1b[31mred\x1b[0m\r\nend"
    text = clean_text(data)
    assert "\x00" not in text and "\x1b" not in text
    assert text.endswith("red\nend")
    assert json.loads(json.dumps(text)) == text
    text.encode("utf-8")  # no lone surrogates


def test_clean_text_keeps_tabs_newlines_and_unicode() -> None:
    assert clean_text("a\tb\nc é ✓".encode()) == "a\tb\nc é ✓"
    assert clean_text(b"abc\xff") == "abc\ufffd"


def test_marker_split_across_chunks_is_found() -> None:
    output = CappedOutput(100, 100)
    reader = MarkerReader("cafe01", output)
    stream = b"hello\x1ecafe01:42\n"
    statuses = [reader.feed(stream[i : i + 1]) for i in range(len(stream))]
    assert statuses[-1] == 42
    assert set(statuses[:-1]) == {None}
    assert output.text() == "hello"


def test_other_tokens_are_output_not_markers() -> None:
    output = CappedOutput(100, 100)
    reader = MarkerReader("cafe01", output)
    assert reader.feed(b"x\x1ebeef02:0\ny") is None
    assert reader.feed(b"\x1ecafe01:-1\nrest") == -1
    assert output.text() == "xbeef02:0\ny"
    assert reader.leftover == b"rest"


def test_quote_escapes_everything_bash_could_interpret() -> None:
    word = quote(b"a'b\"c$(d)`e`\\f\n")
    assert word.startswith("$'") and word.endswith("'")
    inner = word[2:-1]
    for dangerous in "'\"$`\\\n()":
        assert dangerous not in inner.replace("\\x", "")


def test_quote_round_trips_every_byte_through_bash() -> None:
    data = bytes(range(1, 256)) + "unicode ✓ 'quotes' \"double\" $HOME `id`".encode()
    printed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", f"printf %s {quote(data)}"],
        capture_output=True,
        check=True,
    ).stdout
    assert printed == data
