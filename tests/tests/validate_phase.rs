//! `aether validate --phase`: where a GPU run first diverges from its CPU run, from the two event
//! logs. Real Spark runs (`tests/golden/validate-phase`, made by its `make_pairs.py`): one job
//! run again unchanged, and five runs that really differ from it at one point each (an extra
//! input file, a changed filter before the shuffle, a left instead of an inner join, another
//! grouping, groups dropped before the write); and the real GPU logs of the shared datasets.

use std::path::Path;

use aether_validate::phases::{Phase, PhaseChoice, PhaseReport, phases, render};

fn pair(name: &str) -> (String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/validate-phase/logs");
    let p = |n: &str| dir.join(format!("{n}.zstd")).display().to_string();
    (p("cpu"), p(name))
}

fn run(cpu: &str, gpu: &str, choice: PhaseChoice) -> PhaseReport {
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(phases(cpu, gpu, choice))
        .unwrap_or_else(|e| panic!("{cpu} vs {gpu}: {e}"))
}

#[test]
fn a_clean_rerun_has_no_divergence() {
    let (cpu, gpu) = pair("clean");
    let r = run(&cpu, &gpu, PhaseChoice::All);
    let text = render(&r, PhaseChoice::All);
    eprintln!("{text}");
    assert!(r.first.is_none(), "{text}");
    assert!(r.unmatched.is_empty(), "{text}");
    // every phase of the job is there: 2 scans, 3 exchanges, 1 join, 2 aggregates, 1 write
    let count = |p: Phase| r.checkpoints.iter().filter(|c| c.phase == p).count();
    assert_eq!(
        Phase::ALL.map(count),
        [2, 3, 1, 2, 1],
        "checkpoints per phase:\n{text}"
    );
    assert!(text.contains("no divergence in any phase"), "{text}");
}

/// Each run that really differs is caught at its first point, in the right phase and stage,
/// and a phase asked alone reports only its own divergence.
#[test]
fn each_divergence_is_found_where_it_starts() {
    for (name, phase, operator) in [
        ("scan", Phase::Scan, "Scan parquet"),
        ("shuffle", Phase::Shuffle, "Exchange"),
        ("join", Phase::Join, "SortMergeJoin"),
        ("aggregate", Phase::Aggregate, "HashAggregate"),
        (
            "output",
            Phase::Output,
            "Execute InsertIntoHadoopFsRelationCommand",
        ),
    ] {
        let (cpu, gpu) = pair(name);
        let r = run(&cpu, &gpu, PhaseChoice::All);
        let text = render(&r, PhaseChoice::All);
        eprintln!("== {name}\n{text}");
        let d = r
            .first
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: none found\n{text}"));
        let c = &r.checkpoints[d.checkpoint];
        assert_eq!(
            (d.phase, c.gpu.operator.as_str()),
            (phase, operator),
            "{name}\n{text}"
        );
        // nothing before it differs
        assert!(
            r.checkpoints[..d.checkpoint].iter().all(|c| !c.diverges()),
            "{name}: an earlier checkpoint differs\n{text}"
        );
        // the stage is the GPU run's stage of that operator, and the operator is among the
        // stage's operators
        assert_eq!(d.gpu_stage, c.gpu.stages.first().copied(), "{name}");
        assert!(
            d.operators.iter().any(|o| o == operator),
            "{name}: {:?}",
            d.operators
        );
        assert!(
            text.contains(&format!("first divergence: phase {}", phase.name())),
            "{name}\n{text}"
        );
        // asked for that phase alone: the same point; asked for another: not this one
        let alone = run(&cpu, &gpu, PhaseChoice::One(phase));
        assert_eq!(
            alone.first.as_ref().map(|d| d.checkpoint),
            Some(d.checkpoint)
        );
        if phase != Phase::Scan {
            let scan = run(&cpu, &gpu, PhaseChoice::One(Phase::Scan));
            assert!(scan.first.is_none(), "{name}: the scans are the same");
        }
    }
}

/// The rows behind each divergence, as the runs' own task metrics and Spark's results tell
/// them: the extra file holds 10,000 orders; the changed filter (amount > 50 instead of > 10)
/// keeps 98,000 of 200,000 instead of 178,000; the left join keeps the 16,109 orders of
/// customers 1000-1099.
#[test]
fn the_row_counts_are_the_runs_own() {
    let (cpu, gpu) = pair("scan");
    let r = run(&cpu, &gpu, PhaseChoice::One(Phase::Scan));
    let c = &r.checkpoints[r.first.as_ref().unwrap().checkpoint];
    assert_eq!((c.cpu.rows, c.gpu.rows), (Some(200_000), Some(210_000)));
    let (cpu, gpu) = pair("shuffle");
    let r = run(&cpu, &gpu, PhaseChoice::One(Phase::Shuffle));
    let c = &r.checkpoints[r.first.as_ref().unwrap().checkpoint];
    // amount = id * 7919 % 100: every value 0..99 equally often
    assert_eq!((c.cpu.rows, c.gpu.rows), (Some(178_000), Some(98_000)));
    let (cpu, gpu) = pair("join");
    let r = run(&cpu, &gpu, PhaseChoice::One(Phase::Join));
    let c = &r.checkpoints[r.first.as_ref().unwrap().checkpoint];
    assert_eq!(c.gpu.rows.unwrap() - c.cpu.rows.unwrap(), 178_000 - 161_891);
}

/// Real RAPIDS GPU logs reduce to the same kind of checkpoints (GpuScan, GpuColumnarExchange,
/// GpuBroadcastExchange, GpuBroadcastHashJoin, GpuHashAggregate), and a run compared with itself
/// has no divergence.
#[test]
fn gpu_plans_reduce_to_the_same_checkpoints() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/datasets/rapids-tools/spark-events-profiling/nds_q66_gpu.zstd")
        .display()
        .to_string();
    let r = run(&log, &log, PhaseChoice::All);
    let text = render(&r, PhaseChoice::All);
    assert!(r.first.is_none(), "{text}");
    assert!(r.gpu_plugin, "{text}");
    for (phase, op) in [
        (Phase::Scan, "GpuScan parquet"),
        (Phase::Shuffle, "GpuColumnarExchange"),
        (Phase::Shuffle, "GpuBroadcastExchange"),
        (Phase::Join, "GpuBroadcastHashJoin"),
        (Phase::Aggregate, "GpuHashAggregate"),
    ] {
        assert!(
            r.checkpoints
                .iter()
                .any(|c| c.phase == phase && c.gpu.operator == op && c.gpu.rows.is_some()),
            "no {op} with rows in {}:\n{text}",
            phase.name()
        );
    }
}
