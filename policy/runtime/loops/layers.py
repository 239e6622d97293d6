"""Every loop layer, registered once, in the order their findings are decided in.

On a turn the layers count the batch in this order and the first stop ends
the count; on a result every layer records it.  The most severe finding is
decided; between findings of equal severity, the earlier layer's
(docs/design.md, "Decision ordering").  A new layer is one module
implementing ``policy.runtime.loops.layer.Layer``, listed here; its rule and
its syntax are declared once each too (docs/design.md, "Extending policyctl").
"""

from __future__ import annotations

from typing import Any

from policy.runtime.loops.frequency import FrequencyLayer
from policy.runtime.loops.layer import Layer
from policy.runtime.loops.oscillation import OscillationLayer
from policy.runtime.loops.repeat import RepeatLayer
from policy.runtime.loops.streak import ErrorStreakLayer

LAYERS: tuple[type[Layer[Any]], ...] = (RepeatLayer, FrequencyLayer, ErrorStreakLayer, OscillationLayer)
