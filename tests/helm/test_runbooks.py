"""The runbooks' commands are real: CLI commands parse, chart changes render, the objects they name
exist, the settings and metrics they cite exist, and the reconciliation reader reads real records."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import uuid

import pytest
from aiokafka import AIOKafkaProducer

from regions.cli import parse_command
from regions.runtime.settings import Settings
from regions.stores.kafka.topics import ensure_topics
from schema.records import AwardEvent, Codec, Reconciliation
from tests.helm.chart import CHART, ROOT, render
from tests.helm.test_values_rejected import EU

RUNBOOKS = ROOT / "ops" / "runbooks"
TEXT = "\n".join(p.read_text() for p in sorted(RUNBOOKS.glob("*.md")))
REPLICATOR_BUILT = (ROOT / "replicator" / "__main__.py").exists()
#: Placeholders of the runbooks and a value each takes in the checks.
PLACEHOLDERS = {"BOARD_ID": "weekly", "FIXED_TAG": "0.1.1", "=N": "=2", "=P": "=3"}


def _fill(command: str) -> str:
    for placeholder, value in PLACEHOLDERS.items():
        command = command.replace(placeholder, value)
    return command


def _commands(pattern: str) -> list[str]:
    return [_fill(m.group(1).strip()) for m in re.finditer(pattern, TEXT)]


def test_every_cli_command_of_the_runbooks_parses() -> None:
    commands = _commands(r"(?:python -m regions\.cli|ops/lb) ([a-z][^\n`|#]*)")
    assert len(commands) >= 4
    # "rebuild [--board ID]": with and without the optional part.
    variants = {v for c in commands for v in (re.sub(r"\[([^]]*)\]", r"\1", c), re.sub(r"\[[^]]*\]", "", c))}
    for command in variants:
        try:
            parse_command(shlex.split(command))
        except SystemExit:
            pytest.fail(f"not a valid CLI command: {command}")


def test_every_chart_change_of_the_runbooks_renders() -> None:
    upgrades = re.findall(
        r"helm -n \$NS upgrade \$REL helm/leaderboard --reuse-values((?:[^\n]|\\\n)*)", TEXT
    )
    assert len(upgrades) >= 4
    for upgrade in upgrades:
        sets = re.findall(r"--set (\S+)", _fill(upgrade))
        rendered = render(EU, sets=sets)
        assert rendered.ok, f"{sets}: {rendered.error}"


def test_every_named_deployment_exists() -> None:
    named = set(re.findall(r"deploy/\$FULL-([a-z<>-]+)", TEXT))
    rendered = {
        m["metadata"]["name"].removeprefix("eu-leaderboard-")
        for m in render(EU, release="eu").of_kind("Deployment")
    }
    for name in named:
        assert name.replace("<region>", "us") in rendered, name


def test_every_cited_setting_exists() -> None:
    for section, field in re.findall(r"`?([a-z]+)\.settings\.([a-z_]+)", TEXT):
        if section == "replicator" and not REPLICATOR_BUILT:
            continue
        model = type(getattr(Settings(), section))
        assert field in model.model_fields, f"{section}.{field}"


def test_every_cited_metric_exists() -> None:
    sources = "\n".join(
        p.read_text() for d in ("regions", "gateway", "replicator") for p in (ROOT / d).rglob("*.py")
    )
    for metric in set(re.findall(r"\b(lb_[a-z_]+)", TEXT)):
        if metric.startswith("lb_replicator_") and not REPLICATOR_BUILT:
            continue
        assert f'"{metric}"' in sources, metric


def test_every_runbook_is_listed() -> None:
    index = (RUNBOOKS / "README.md").read_text()
    for page in RUNBOOKS.glob("*.md"):
        assert page.name == "README.md" or f"({page.name})" in index, page.name
    assert (CHART / "templates" / "NOTES.txt").read_text().count("ops/runbooks") == 1


@pytest.mark.integration
async def test_the_reconciliation_reader_prints_the_records_as_piped_into_a_pod(
    settings: Settings, kafka_ready: None
) -> None:
    await ensure_topics(settings.kafka)
    award = AwardEvent(
        event_id="0" * 32, digest="1" * 16, board_id="weekly", match_id="m1", user_id="alice",
        award_type="points", amount=10, occurred_at_ms=None, region="eu", accepted_at_ms=1,
        aggregation="SUM", sort_order="DESC", tie_policy="USER_ID",
    )  # fmt: skip
    records = [
        Reconciliation(
            reason="conflicting_repeat", detail="d", award=award, source_partition=2, source_offset=9
        ),
        Reconciliation(reason="undecodable", detail="x", award=None, source_partition=1, source_offset=3),
    ]
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await producer.start()
    try:
        for r in records:
            await producer.send_and_wait(
                settings.kafka.topic("reconciliation"), Codec().encode(r), partition=0
            )
    finally:
        await producer.stop()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LB_")}
    env |= {"LB_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
            "LB_KAFKA__TOPIC_PREFIX": settings.kafka.topic_prefix}  # fmt: skip
    script = (RUNBOOKS / "reconciliation.py").read_bytes()

    def run(*args: str) -> list[dict[str, object]]:
        done = subprocess.run(
            [sys.executable, "-", *args], input=script, env=env, capture_output=True, check=True
        )
        return [json.loads(line) for line in done.stdout.decode().splitlines()]

    everything = await asyncio.to_thread(run)
    assert [(r["reason"], r["offset"]) for r in everything] == [("conflicting_repeat", 0), ("undecodable", 1)]
    assert everything[0]["board"] == "weekly" and everything[0]["award_offset"] == 9
    assert [r["reason"] for r in await asyncio.to_thread(run, "--last", "1")] == ["undecodable"]
    assert [r["reason"] for r in await asyncio.to_thread(run, "--board", "weekly")] == ["conflicting_repeat"]
    assert await asyncio.to_thread(run, "--board", f"none-{uuid.uuid4().hex[:4]}") == []
