"""The workbench's warehouse tables: eval runs written and read back as DataFrames with their ids."""

from __future__ import annotations

from pathlib import Path

from evals.workbench import eval_run
from supervisor.settings import Settings
from supervisor.warehouse import open_warehouse
from supervisor.warehouse.evals_store import read_eval_results, read_eval_runs, read_eval_suite_metrics


def test_eval_run_round_trip(small_suites: Path, sv_home: Path) -> None:
    settings = Settings(home=sv_home)
    run, path, err = eval_run("all", "baseline", settings=settings, reports_dir=sv_home / "rep",
                              suites_root=small_suites)
    assert err is None and path is not None and path.exists()
    # saving the same run again replaces it (idempotent by id)
    from supervisor.warehouse.evals_store import save_eval_run

    with open_warehouse(settings.warehouse) as wh:
        save_eval_run(wh, run.model_dump(mode="json"))
    with open_warehouse(settings.warehouse, read_only=True) as wh:
        runs = read_eval_runs(wh)
        assert runs.height == 1 and runs["eval_run_id"][0] == run.eval_run_id
        assert runs["policy_id"][0] == run.policy_id and runs["cases"][0] == 7
        res = read_eval_results(wh, run.eval_run_id)
        assert res.height == 7 and {"eval_run_id", "policy_id", "suite", "case_id", "suite_hash"} <= set(res.columns)
        assert res.filter(res["case_id"] == "danger-claude")["status"][0] == "pass"
        per_suite = read_eval_suite_metrics(wh, run.eval_run_id)
        assert sorted(per_suite["suite"].to_list()) == ["gates", "mini"]
        assert per_suite["cases"].sum() == 7
