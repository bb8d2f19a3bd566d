"""Installation tokens: scoped to one repository, minted once, cached encrypted across processes."""

from __future__ import annotations

import os
import subprocess
import sys

from githubkit import AppAuthStrategy, GitHub

from tests.fakes.app_key import app_key_pair
from tests.worker.conftest import APP_ID
from worker.tokens import JOB_PERMISSIONS, InstallationTokens


def test_a_token_is_scoped_to_one_repository_and_the_jobs_permissions(
    fake_github, app_client, redis
):
    token = InstallationTokens(redis, app_client, app_key_pair()[0]).get(4242, "hello")
    minted = fake_github.tokens[token]
    assert minted.repositories == ["hello"]
    assert minted.permissions == JOB_PERMISSIONS


def test_tokens_are_cached_in_redis_encrypted(fake_github, app_client, redis):
    tokens = InstallationTokens(redis, app_client, app_key_pair()[0])
    first = tokens.get(4242, "hello")
    assert tokens.get(4242, "hello") == first
    assert len(fake_github.tokens) == 1
    stored = b"".join(redis.get(key) or b"" for key in redis.keys("wrench:token:*"))
    assert stored and first.encode() not in stored
    assert 0 < redis.ttl(redis.keys("wrench:token:*")[0]) <= 3600


def test_another_process_reuses_the_cached_token(fake_github, app_client, redis, redis_url):
    token = InstallationTokens(redis, app_client, app_key_pair()[0]).get(4242, "hello")
    script = (
        "import os\n"
        "from githubkit import AppAuthStrategy, GitHub\n"
        "from redis import Redis\n"
        "from worker.tokens import InstallationTokens\n"
        "key = os.environ['KEY']\n"
        f"app = GitHub(AppAuthStrategy('{APP_ID}', key), base_url={fake_github.url!r})\n"
        f"print(InstallationTokens(Redis.from_url({redis_url!r}), app, key).get(4242, 'hello'))\n"
    )
    env = {**os.environ, "KEY": app_key_pair()[0]}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == token
    assert len(fake_github.tokens) == 1


def test_a_cache_sealed_with_another_app_key_is_not_used(fake_github, app_client, redis):
    InstallationTokens(redis, app_client, app_key_pair()[0]).get(4242, "hello")
    other = InstallationTokens(redis, app_client, "another key")
    token = other.get(4242, "hello")
    assert len(fake_github.tokens) == 2 and token in fake_github.tokens


def test_a_bad_app_key_cannot_mint(fake_github, redis):
    strategy = AppAuthStrategy(str(APP_ID + 1), app_key_pair()[0])
    with GitHub(strategy, base_url=fake_github.url, http_cache=False) as wrong_app:
        tokens = InstallationTokens(redis, wrong_app, app_key_pair()[0])
        try:
            tokens.get(4242, "hello")
        except Exception as exc:  # githubkit raises RequestFailed for the 401
            assert "401" in str(exc)
        else:
            raise AssertionError("a token was minted with the wrong App id")
    assert fake_github.tokens == {}
