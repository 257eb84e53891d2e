"""The chart runs the real code: each container the ``eu`` values render is started here, exactly as
rendered (command, args, environment), against the local servers, and must become ready.

Only what cannot be the same on this machine is changed, through values on top of
``ci/eu-values.yaml``: the store addresses (both regions point at the local servers, so the
replicator copies from the same Kafka), ports, unique topic/key/keyspace names, single-copy
replication. Secret references are replaced by the development values. ``python`` is this
environment's interpreter. Every ``LB_*`` variable of the test runner is dropped first, so what the
processes read is what the chart rendered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cassandra.cluster import Cluster

from regions.intake.client import AwardClient
from regions.runtime.settings import DEV_ADMIN_TOKEN, DEV_AWARD_KEY_ID, DEV_AWARD_SECRET, Settings
from regions.stores.cassandra.session import connect
from tests.harness import delete_topics, free_port, terminate
from tests.helm.chart import CHART, ROOT, Manifest, render

pytestmark = pytest.mark.integration

EU = CHART / "ci" / "eu-values.yaml"
REPLICATOR_BUILT = (ROOT / "replicator" / "__main__.py").exists()

#: What the secret references of the rendered env stand for on a development machine.
DEV_SECRETS = {
    "LB_INTAKE__AWARD_KEYS": json.dumps({DEV_AWARD_KEY_ID: DEV_AWARD_SECRET}),
    "LB_GATEWAY__ADMIN_TOKEN": DEV_ADMIN_TOKEN,
}
COMPONENTS = ("intake", "gateway", "processor", "projector", "audit", "lifecycle", "replicator")


def local_values(base: Settings, tag: str, state_dir: Path) -> dict[str, Any]:
    """Values that point the eu release at this machine's servers, on free ports, with the processor's
    state store in ``state_dir`` instead of the pod's volume path."""
    kafka, redis_url, cassandra = base.kafka.bootstrap_servers, base.redis.url, base.cassandra
    local = {"kafkaBootstrapServers": kafka, "redisUrl": redis_url}
    return {
        "global": {"regions": {"eu": local, "us": local}},
        "kafka": {"topicPrefix": f"h{tag}", "replicationFactor": 1, "minInsyncReplicas": 1},
        "redis": {"url": redis_url, "settings": {"key_prefix": f"h{tag}"}},
        "cassandra": {
            "contactPoints": cassandra.contact_points,
            "port": cassandra.port,
            "localDatacenter": cassandra.local_dc,
            "keyspace": f"lbhelm_{tag}",
            "replicationFactor": 1,
        },
        **{c: {"containerPort": free_port()} for c in COMPONENTS},
        "processor": {"containerPort": free_port(), "settings": {"store_dir": str(state_dir)}},
    }


@dataclass(frozen=True, slots=True)
class Container:
    """One rendered container, ready to run here."""

    workload: str
    component: str
    argv: list[str]
    env: dict[str, str]
    port: int | None


def _resolve_env(workload: str, entries: list[Manifest]) -> dict[str, str]:
    """As the kubelet does: secret references resolved, $(NAME) expanded from earlier entries."""
    env: dict[str, str] = {}
    for entry in entries:
        name = entry["name"]
        if "value" in entry:
            env[name] = re.sub(
                r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m[1], m[0]), entry["value"]
            )
        elif name in DEV_SECRETS and "secretKeyRef" in entry["valueFrom"]:
            env[name] = DEV_SECRETS[name]
        else:
            raise AssertionError(f"{workload}: no local value for env {name} from {entry['valueFrom']}")
    return env


def containers_of(manifests: list[Manifest]) -> list[Container]:
    out = []
    for m in manifests:
        if m["kind"] not in ("Deployment", "Job"):
            continue
        for c in m["spec"]["template"]["spec"]["containers"]:
            argv = [*c.get("command", []), *c.get("args", [])]
            assert argv[0] == "python", f"{m['metadata']['name']}: {argv}"
            ports = c.get("ports", [])
            out.append(
                Container(
                    workload=m["metadata"]["name"],
                    component=m["metadata"]["labels"]["app.kubernetes.io/component"],
                    argv=[sys.executable, *argv[1:]],
                    env=_resolve_env(m["metadata"]["name"], c.get("env", [])),
                    port=ports[0]["containerPort"] if ports else None,
                )
            )
    return out


def process_env(container: Container) -> dict[str, str]:
    """The machine's environment without any LB_* variable, plus exactly the rendered env."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LB_")}
    return {**clean, **container.env}


@dataclass
class Deployment:
    containers: list[Container]
    logs: Path
    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)

    def of(self, component: str) -> list[Container]:
        return [c for c in self.containers if c.component == component]

    async def run_to_end(self, container: Container, *extra: str) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            *container.argv, *extra, env=process_env(container), cwd=self.logs,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(process.communicate(), 180)
        return process.returncode or 0, out.decode(errors="replace")

    async def start(self, container: Container) -> None:
        with (self.logs / f"{container.workload}.log").open("ab") as log:
            self.processes[container.workload] = await asyncio.create_subprocess_exec(
                *container.argv, env=process_env(container), cwd=self.logs, stdout=log, stderr=log
            )

    def tail(self, workload: str) -> str:
        path = self.logs / f"{workload}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-30:]) if path.exists() else ""

    async def wait_ready(self, container: Container, within: float = 120) -> dict[str, Any]:
        """Poll the rendered port's /readyz until it answers 200; fail early if the process dies."""
        url = f"http://127.0.0.1:{container.port}/readyz"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        async with httpx.AsyncClient() as http:
            while loop.time() < deadline:
                process = self.processes[container.workload]
                if process.returncode is not None:
                    raise AssertionError(
                        f"{container.workload} exited with {process.returncode}:\n{self.tail(container.workload)}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    response = await http.get(url)
                    if response.status_code == 200:
                        body: dict[str, Any] = response.json()
                        return body
                await asyncio.sleep(0.2)
        raise AssertionError(
            f"{container.workload} not ready after {within}s:\n{self.tail(container.workload)}"
        )

    async def stop_all(self) -> None:
        for workload, process in self.processes.items():
            await terminate(process)
            print(f"---- {workload} log tail\n{self.tail(workload)}")


@pytest.fixture(scope="module")
def rendered_eu(
    base_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Container]]:
    tag = uuid.uuid4().hex[:8]
    directory = tmp_path_factory.mktemp("helm-eu")
    overrides = directory / "local-values.yaml"
    overrides.write_text(yaml.safe_dump(local_values(base_settings, tag, directory / "processor-state")))
    containers = containers_of(render(EU, overrides, release="eu").manifests())
    yield containers
    asyncio.run(delete_topics(base_settings.kafka, f"h{tag}."))
    keyspace = containers[0].env["LB_CASSANDRA__KEYSPACE"]
    cluster: Cluster
    cluster, session = connect(base_settings.cassandra, keyspace=False)
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    finally:
        cluster.shutdown()


@pytest.fixture
async def deployment(
    rendered_eu: list[Container], tmp_path: Path, kafka_ready: None, redis_ready: None, cassandra_ready: None
) -> AsyncIterator[Deployment]:
    deployment = Deployment(rendered_eu, tmp_path)
    (bootstrap,) = deployment.of("bootstrap")
    code, out = await deployment.run_to_end(bootstrap)
    assert code == 0, f"the bootstrap job failed:\n{out}"
    try:
        yield deployment
    finally:
        await deployment.stop_all()


async def test_every_rendered_component_starts_and_becomes_ready(deployment: Deployment) -> None:
    started = []
    for component in ("processor", "projector", "audit", "lifecycle", "intake", "gateway"):
        (container,) = deployment.of(component)
        await deployment.start(container)
        started.append(container)
    for container in started:
        report = await deployment.wait_ready(container)
        assert report.get("ready", True) is True, (container.workload, report)


async def test_an_award_sent_to_the_rendered_intake_is_read_from_the_rendered_gateway(
    deployment: Deployment,
) -> None:
    """The components agree on topics, keys and keyspace: the chart wired them to each other."""
    for component in ("processor", "projector", "intake", "gateway"):
        (container,) = deployment.of(component)
        await deployment.start(container)
    for component in ("processor", "projector", "intake", "gateway"):
        await deployment.wait_ready(deployment.of(component)[0])
    (bootstrap,) = deployment.of("bootstrap")
    board = f"helm-{uuid.uuid4().hex[:6]}"
    code, out = await _cli(deployment, bootstrap, "create-board", board)
    assert code == 0, out
    (intake,) = deployment.of("intake")
    client = AwardClient(f"http://127.0.0.1:{intake.port}")
    try:
        award = {
            "leaderboardId": board,
            "matchId": "m1",
            "userId": "alice",
            "awardType": "points",
            "delta": 7,
        }
        response = await client.send(award)
        assert response.status_code == 202, response.text
    finally:
        await client.aclose()
    (gateway,) = deployment.of("gateway")
    query = {"query": f'{{ leaderboard(id: "{board}") {{ top(k: 1) {{ entries {{ userId score }} }} }} }}'}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{gateway.port}") as http:
        entries: list[Any] = []
        deadline = asyncio.get_running_loop().time() + 60
        while entries != [{"userId": "alice", "score": 7}]:
            assert asyncio.get_running_loop().time() < deadline, f"gateway still answers {entries}"
            data = (await http.post("/graphql", json=query)).json()["data"]["leaderboard"]
            entries = data["top"]["entries"]
            await asyncio.sleep(0.1)


async def _cli(deployment: Deployment, bootstrap: Container, *args: str) -> tuple[int, str]:
    """The bootstrap job's CLI with another command: its env is every process's env."""
    cli = Container(bootstrap.workload, "cli", bootstrap.argv[:3], bootstrap.env, None)
    return await deployment.run_to_end(cli, *args)


@pytest.mark.skipif(not REPLICATOR_BUILT, reason="replicator/__main__.py does not exist yet")
async def test_each_rendered_replicator_starts_and_becomes_ready(deployment: Deployment) -> None:
    replicators = deployment.of("replicator")
    assert [c.env["LB_REPLICATOR__SOURCE_REGION"] for c in replicators] == ["us"]
    for container in replicators:
        await deployment.start(container)
    for container in replicators:
        await deployment.wait_ready(container)
