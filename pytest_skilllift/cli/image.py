"""``skilllift image``: build and check the docker runner's images.

``skilllift image build --tag TAG`` builds the Dockerfile image (connected machines: base
image registry + npm); ``--from-local`` builds with no registry from the CLI on this machine;
``skilllift image check --tag TAG`` prints the image's CLI version against the pinned one.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from pytest_skilllift.model import PINNED_CLI_VERSION
from pytest_skilllift.runners.image import (
    ImageBuildError,
    build_from_dockerfile,
    build_from_local,
    image_cli_version,
    mismatch_message,
)

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``image build`` and ``image check`` (the dispatch convention of cli.py)."""
    image = subparsers.add_parser("image", help="build or check the docker runner's image")
    image_sub = image.add_subparsers(dest="image_command", metavar="ACTION",
                                     help="what to do with the image")
    image.set_defaults(func=lambda args: _help(image))

    build = image_sub.add_parser(
        "build", help="build the agent image",
        description="Build the image the docker runner uses. Without --from-local this builds "
                    "docker/Dockerfile (needs the base image registry and npm); with "
                    "--from-local it needs no registry at all.")
    build.add_argument("--tag", required=True, metavar="TAG",
                       help="image tag, e.g. skilllift:local")
    build.add_argument("--from-local", action="store_true",
                       help="assemble the image from the Claude Code CLI on this machine "
                            "(docker import of a minimal root filesystem)")
    build.add_argument("--claude", metavar="PATH", default=None,
                       help="the CLI binary for --from-local (default: the one bundled in "
                            "claude-agent-sdk)")
    build.add_argument("--cli-version", default=PINNED_CLI_VERSION, metavar="VERSION",
                       help=f"npm version for the Dockerfile build (default {PINNED_CLI_VERSION})")
    build.add_argument("--dockerfile", metavar="PATH", default=None,
                       help="a Dockerfile to build instead of the packaged one")
    build.add_argument("--no-smoke", action="store_true",
                       help="skip running `claude --version` in the new image")
    build.set_defaults(func=_build)

    add = image_sub.add_parser(
        "add-agents", help=f"add the {_titles()} installed here",
        description="Build TAG from BASE (a skilllift image) with the npm agent CLIs found on "
                    "this machine's PATH added, so the docker runner runs labels naming "
                    "those agents (docs/agents.md). Needs no registry.")
    add.add_argument("--base", required=True, metavar="IMAGE",
                     help="the skilllift image to build on")
    add.add_argument("--tag", required=True, metavar="TAG", help="the new image's tag")
    add.set_defaults(func=_add_agents)

    base = image_sub.add_parser(
        "task-base", help="build the base image Harbor task Dockerfiles can start FROM offline",
        description="Build a base image for Harbor tasks (docs/tasks.md) from this machine's "
                    "Debian packages, with no registry: busybox, bash, python3 and pytest "
                    "(apt-get install python3-pytest busybox-static). The demo's tasks build "
                    "FROM it.")
    base.add_argument("--tag", default=None, metavar="TAG",
                      help="the image's tag (default: skilllift-task-base:local)")
    base.set_defaults(func=_task_base)

    check = image_sub.add_parser("check", help="print an image's CLI version vs the pinned one")
    check.add_argument("--tag", required=True, metavar="TAG",
                       help="the image to check, e.g. skilllift:local")
    check.set_defaults(func=_check)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _client() -> Any:
    # The docker SDK (≈ 0.2 s of imports) loads only when an image command runs, not for
    # every ``skilllift`` invocation that merely registers this subcommand.
    import docker.client

    return docker.client.from_env()


def _build(args: argparse.Namespace) -> int:
    import docker.errors

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        client = _client()
        if args.from_local:
            if args.dockerfile:
                log("note: --dockerfile is ignored with --from-local")
            info = build_from_local(client, args.tag, args.claude, smoke=not args.no_smoke,
                                    log=log)
        else:
            info = build_from_dockerfile(client, args.tag, args.cli_version,
                                         dockerfile=args.dockerfile, log=log)
    except (ImageBuildError, docker.errors.DockerException, OSError) as exc:
        print(f"skilllift image build: {exc}", file=sys.stderr)
        return 1
    print(f"built {info.tag} ({info.source}): Claude Code {info.cli_version or 'unknown'}, "
          f"{info.size_bytes / 1e6:.0f} MB, {info.seconds:.1f}s, id {info.image_id[:19]}")
    for warning in info.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _titles() -> str:
    """``Codex CLI, Gemini CLI and OpenCode``: the agents an image is given (the registry's)."""
    from pytest_skilllift.agents.registry import AGENTS

    names = [a.title for a in AGENTS.values() if a.image is not None]
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def _add_agents(args: argparse.Namespace) -> int:
    import docker.errors

    from pytest_skilllift.agents.registry import AGENTS
    from pytest_skilllift.runners import agents
    from pytest_skilllift.runners.agent_image import build_agents_image

    clis = {a.name: agents.find_cli(a.name) for a in AGENTS.values() if a.image is not None}
    found = {a: p for a, p in clis.items() if p}
    for agent in sorted(set(clis) - set(found)):
        print(f"note: {agents.missing_cli_message(agent)}; left out", file=sys.stderr)
    if not found:
        print("skilllift image add-agents: no agent CLI found", file=sys.stderr)
        return 1
    try:
        versions = build_agents_image(_client(), args.base, args.tag, found,
                                      log=lambda line: print(line, file=sys.stderr))
    except (ImageBuildError, docker.errors.DockerException, OSError) as exc:
        print(f"skilllift image add-agents: {exc}", file=sys.stderr)
        return 1
    print(f"built {args.tag} from {args.base}: "
          + ", ".join(f"{a} {v}" for a, v in versions.items()))
    return 0


def _task_base(args: argparse.Namespace) -> int:
    import docker.errors

    from pytest_skilllift.runners.task_base import TASK_BASE_TAG, build_task_base

    tag = args.tag or TASK_BASE_TAG
    try:
        seconds = build_task_base(_client(), tag, log=lambda line: print(line, file=sys.stderr))
    except (ImageBuildError, docker.errors.DockerException, OSError) as exc:
        print(f"skilllift image task-base: {exc}", file=sys.stderr)
        return 1
    print(f"built {tag} in {seconds:.1f}s")
    return 0


def _check(args: argparse.Namespace) -> int:
    import docker.errors

    try:
        version = image_cli_version(_client(), args.tag)
    except docker.errors.DockerException as exc:
        print(f"skilllift image check: {exc}", file=sys.stderr)
        return 1
    message = mismatch_message(version)
    print(f"{args.tag}: Claude Code {version or 'unknown'} (pinned {PINNED_CLI_VERSION})"
          + (f" — MISMATCH: {message}" if message else " — ok"))
    return 1 if message else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_skilllift.cli.image build …``: the image commands alone,
    usable before the rest of the ``skilllift`` CLI is importable (CI's setup script)."""
    parser = argparse.ArgumentParser(prog="skilllift image")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["image", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
