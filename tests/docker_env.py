"""Whether the docker tests can run here: one check for every module that needs the engine."""

from __future__ import annotations

from pytest_skilllift.runners.image import TEST_IMAGE_TAG


def docker_problem() -> str | None:
    """Why the docker tests cannot run here (no SDK, no engine, no test image), or None."""
    try:
        import docker.client

        client = docker.client.from_env()
        try:
            client.ping()
            client.images.get(TEST_IMAGE_TAG)
        finally:
            client.close()
    except Exception as exc:
        return (f"needs a Docker engine and the image {TEST_IMAGE_TAG} "
                f"({type(exc).__name__}: {exc}); run .ci/docker-setup.sh")
    return None
