"""Deaths a job cannot report itself: rq's callbacks edit its tracking comment, once."""

from __future__ import annotations

import pytest
from rq import Queue
from rq.exceptions import AbandonedJobError

from tests.fakes.app_key import app_key_pair
from tests.worker.conftest import APP_ID, REPO
from worker import failures


@pytest.fixture
def tracked_job(fake_github, redis, redis_url, monkeypatch, tmp_path):
    # The callbacks run in rq's processes and read the settings like any entry point.
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "APP_ID": str(APP_ID),
        "PRIVATE_KEY": app_key_pair()[0],
        "GITHUB_API_URL": fake_github.url,
        "REDIS_URL": redis_url,
    }.items():
        monkeypatch.setenv(name, value)
    comment = fake_github.add_comment(REPO, 1, "🔧 **Wrench** is working", login="wrench[bot]")
    job = Queue("failures-test", connection=redis).enqueue("worker.job.run_job", {})
    spec = {"repository": REPO, "number": 1, "installation_id": 4242}
    failures.record_tracking(job, spec, comment["id"])
    return job, comment


def test_an_abandoned_job_says_its_worker_disappeared(tracked_job):
    job, comment = tracked_job
    failures.on_job_failure(job, job.connection, AbandonedJobError, AbandonedJobError(), None)
    assert "the worker running this job disappeared" in comment["body"]
    assert f"job {job.id}" in comment["body"]


def test_a_killed_work_horse_says_which_signal(tracked_job):
    job, comment = tracked_job
    failures.on_work_horse_killed(job, 1234, 9, None)
    assert "was killed (signal 9)" in comment["body"]


def test_a_job_that_reported_its_own_end_is_left_alone(tracked_job):
    job, comment = tracked_job
    failures.mark_reported(job)
    failures.on_job_failure(job, job.connection, RuntimeError, RuntimeError("x"), None)
    assert comment["history"] == ["🔧 **Wrench** is working"]
