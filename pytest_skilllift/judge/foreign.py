"""What the judges of other families (OpenAI, Google) share on top of :class:`Judge`.

Each speaks its provider's SDK (``openai_client``, ``google_client``) with the same protocol; what
is the same for both lives here once: the model name the week records (``PROVIDER:MODEL``) beside
the name the SDK is given, and the list-price cost of a reply from its token counts.
"""

from __future__ import annotations

from typing import Any

from pytest_skilllift.judge.client import CACHE_READ_FACTOR, Judge
from pytest_skilllift.judge.providers import price_rates

NO_USAGE_NOTE = "the reply carried no usage; cost recorded as 0"


class ForeignJudge(Judge):
    """A judge reached through another provider's SDK (subclasses set ``provider``)."""

    provider = ""
    batch_api = ""  # each provider's class names its batch API (providers.BATCH_APIS)

    def __init__(self, model: str, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.api_model = model  # the SDK's name; ``model`` is what grades.json records
        self.model = f"{self.provider}:{model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.api_model!r}, base_url={self.base_url!r})"

    def _list_price(self, replied: str,
                    tokens: tuple[int, int, int] | None) -> tuple[float, str | None]:
        """USD of one reply from ``(input, cached input, output)`` tokens (None: the reply
        carried no usage) at the provider's list price, and the note when it is a guess."""
        rate_in, rate_out, note = price_rates(self.provider, replied)
        if tokens is None:
            return 0.0, NO_USAGE_NOTE
        tokens_in, cached, tokens_out = tokens
        cost = ((tokens_in - cached) * rate_in + cached * rate_in * CACHE_READ_FACTOR
                + tokens_out * rate_out) / 1_000_000
        return cost, note
