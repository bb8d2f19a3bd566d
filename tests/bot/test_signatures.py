"""Signature checks against the vendors' own documented examples."""

from bot.signatures import github_signature, verify_github


def test_githubs_documented_test_vector_verifies():
    # https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
    secret, body = b"It's a Secret to Everybody", b"Hello, World!"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert github_signature(secret, body) == expected
    assert verify_github(secret, body, expected)


def test_a_changed_body_or_sha1_header_fails():
    secret = b"It's a Secret to Everybody"
    good = github_signature(secret, b"Hello, World!")
    assert not verify_github(secret, b"Hello, World?", good)
    assert not verify_github(
        secret, b"Hello, World!", "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"
    )
    assert not verify_github(secret, b"Hello, World!", None)
