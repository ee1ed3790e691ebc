#!/bin/bash
# The reference solution (never shown to the agent): the skill's own command.
python3 - <<'PY'
import csv, json
totals = {}
with open("/app/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        totals[row["region"]] = totals.get(row["region"], 0.0) + float(row["amount"].replace(",", ""))
json.dump({"total": round(sum(totals.values()), 2),
           "by_region": {k: round(v, 2) for k, v in sorted(totals.items())}},
          open("/app/report.json", "w"), indent=1, sort_keys=True)
PY
