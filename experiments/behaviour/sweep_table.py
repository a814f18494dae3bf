"""Write a seeded sweep's trial table and comparison (no MLflow) to OUT/trials.csv and OUT/comparison.csv."""
import sys
from pathlib import Path

from hindsight_lab.sweep import SweepSpec, run_sweep

spec, trials, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
out.mkdir(parents=True, exist_ok=True)
result = run_sweep(SweepSpec.from_yaml(spec), trials=trials, mlflow=False, baselines=True)
result.trials.to_csv(out / "trials.csv", index=False)
result.comparison.to_csv(out / "comparison.csv")
