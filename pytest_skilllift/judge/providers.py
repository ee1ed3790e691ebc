"""Which provider a judge model belongs to, how it is reached, what it costs, whose relative it is.

``--skill-lift-judge-model`` takes ``PROVIDER:MODEL``: ``anthropic:`` (the default, also what a
bare model id means), ``openai:`` (the official ``openai`` SDK's Responses API) or
``google:`` (the official ``google-genai`` SDK). Each provider is reached through its own
variables — a key variable the SDK reads and a base-URL variable — and the key is handed to
the SDK and nowhere else (never written to disk, never in a result).

*Families*: Drupal ai_eval warns when the judge and the model under test share a family, and
dotnet/skills' evaluation never lets an agent be graded by its own family. :func:`family_of`
names the family of a judge model or of a label's agent model (anthropic, openai, google, or
"" when unknown); :func:`same_family_labels` lists the labels a judge is a relative of, so the
scorecard and the terminal can warn (a warning, never a changed verdict).

Pure: no SDK import, no network.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_skilllift.model import (
    ANTHROPIC,
    GOOGLE,
    OPENAI,
    PROVIDERS,
    family_of,
    label_family,
    same_family_labels,
    split_judge,
)

__all__ = [
    "BASE_URL_VARS",
    "BATCH_APIS",
    "KEY_VARS",
    "PROVIDERS",
    "JudgeSpec",
    "family_of",
    "label_family",
    "parse_judge_spec",
    "parse_judges",
    "price_rates",
    "same_family_labels",
]


#: The key variables each provider's SDK reads (the first is the one documented), and the
#: variable its base URL is taken from (an endpoint compatible with that provider's API).
KEY_VARS: dict[str, tuple[str, ...]] = {
    ANTHROPIC: ("ANTHROPIC_API_KEY",),
    OPENAI: ("OPENAI_API_KEY",),
    GOOGLE: ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
BASE_URL_VARS: dict[str, str] = {
    ANTHROPIC: "ANTHROPIC_BASE_URL",
    OPENAI: "OPENAI_BASE_URL",
    GOOGLE: "GOOGLE_GEMINI_BASE_URL",
}
#: The batch API each provider's judge uses for ``--skill-lift-judge-batch`` (each billed at
#: 50% of the list price, the providers' published batch discount); a provider missing here
#: would grade directly, and the terminal's batch line would say so.
BATCH_APIS: dict[str, str] = {ANTHROPIC: "Message Batches", OPENAI: "OpenAI Batch",
                              GOOGLE: "Gemini Batch Mode"}

@dataclass(frozen=True)
class JudgeSpec:
    """One judge as ``--skill-lift-judge-model`` / ``--skill-lift-judges`` name it."""

    provider: str
    model: str

    @property
    def name(self) -> str:
        """``provider:model``: how the judge is named in scores.csv, grades.json and the
        scorecard (a bare model id for the default provider, as weeks have always said)."""
        return self.model if self.provider == ANTHROPIC else f"{self.provider}:{self.model}"

    @property
    def family(self) -> str:
        """The model family the judge belongs to: its provider."""
        return self.provider

    def key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The API key from the provider's variables (``env`` first, then the process's)."""
        for var in KEY_VARS[self.provider]:
            for source in (env or {}, os.environ):
                if source.get(var):
                    return source[var]
        return None

    def base_url(self, env: Mapping[str, str] | None = None) -> str | None:
        """The base URL from the provider's variable, or None (the SDK's default)."""
        var = BASE_URL_VARS[self.provider]
        return (env or {}).get(var) or os.environ.get(var) or None


def parse_judge_spec(text: str, *, default_model: str = "") -> JudgeSpec:
    """``"openai:gpt-5"`` → ``JudgeSpec("openai", "gpt-5")``; a bare id is an Anthropic model
    (``default_model`` when empty). Raises ``ValueError`` naming the fix
    (:func:`~pytest_skilllift.model.split_judge`)."""
    provider, model = split_judge(text)
    model = model or default_model
    if not model:
        raise ValueError(f"judge {text!r}: no model given")
    return JudgeSpec(provider, model)


def parse_judges(text: str, *, default_model: str = "") -> list[JudgeSpec]:
    """``--skill-lift-judges=a,b,c``: the panel's judges, in order (each named once)."""
    specs = [parse_judge_spec(part, default_model=default_model)
             for part in text.split(",") if part.strip()]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"judges {text!r}: a judge is named twice")
    return specs


# ---------------------------------------------------------------------------------------------
# Prices of the other providers (the Anthropic table is judge.client.PRICES)

#: USD per million tokens ``(input, output)``, longest matching model prefix wins (the
#: providers' pricing pages; check when a new generation ships). A model no prefix matches is
#: priced as the provider's dearest row, and the cost says the price is assumed.
OTHER_PRICES: dict[str, dict[str, tuple[float, float]]] = {
    OPENAI: {"gpt-5": (1.25, 10.0), "gpt-5-mini": (0.25, 2.0), "gpt-5-nano": (0.05, 0.40),
             "gpt-4.1": (2.0, 8.0), "gpt-4.1-mini": (0.40, 1.60), "gpt-4o": (2.50, 10.0),
             "gpt-4o-mini": (0.15, 0.60), "o3": (2.0, 8.0), "o4-mini": (1.10, 4.40)},
    GOOGLE: {"gemini-2.5-pro": (1.25, 10.0), "gemini-2.5-flash": (0.30, 2.50),
             "gemini-2.5-flash-lite": (0.10, 0.40), "gemini-2.0-flash": (0.10, 0.40)},
}


def price_rates(provider: str, model: str) -> tuple[float, float, str | None]:
    """``(input, output, note)`` USD per million tokens for a non-Anthropic judge model."""
    table = OTHER_PRICES[provider]
    name = model.lower().removeprefix("models/")
    matches = [p for p in table if name.startswith(p)]
    if matches:
        rate_in, rate_out = table[max(matches, key=len)]
        return rate_in, rate_out, None
    dearest = max(table, key=lambda p: table[p])
    rate_in, rate_out = table[dearest]
    return rate_in, rate_out, (f"judge model {model!r} is not in the {provider} price table; "
                               f"priced as {dearest} (${rate_in:g}/${rate_out:g} per MTok)")
