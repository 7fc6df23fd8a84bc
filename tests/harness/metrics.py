"""Reading a Prometheus text exposition (``GET /metrics``) in tests.

``Samples.parse(text)`` keeps every sample by name and labels; ``samples.value(name,
**labels)`` is one sample's value (0.0 when absent: a counter not incremented yet has no
sample), ``samples.total(name, **labels)`` the sum over every sample whose labels include
``labels``. Parsing is ``prometheus_client``'s own parser, so a malformed exposition fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Samples"]


@dataclass(frozen=True)
class Samples:
    """The samples of one scrape: ``(name, sorted label pairs) -> value``."""

    values: dict[tuple[str, tuple[tuple[str, str], ...]], float]

    @classmethod
    def parse(cls, text: str) -> Samples:
        values = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        return cls(values)

    def names(self) -> set[str]:
        return {name for name, _ in self.values}

    def value(self, name: str, **labels: str) -> float:
        """The sample ``name{labels}`` exactly, 0.0 when there is none."""
        return self.values.get((name, tuple(sorted(labels.items()))), 0.0)

    def total(self, name: str, **labels: str) -> float:
        """The sum of the samples ``name`` whose labels include ``labels``."""
        wanted = set(labels.items())
        return sum(v for (n, pairs), v in self.values.items() if n == name and wanted <= set(pairs))
