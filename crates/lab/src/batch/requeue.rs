//! A task the engine requeued (its node was lost) may have written its
//! cell before the node died: that run's passed cell counts, and the cell
//! is not run twice.
use std::path::Path;

use anyhow::Result;

use super::tagged::{self, PlanRef};
use crate::results::{CellResult, CellStatus};
use model::cell::BatchTask;

/// The passed cell an earlier run of this same task (same plan cell, same
/// engine task id) wrote into `results`, if the engine requeued the task.
pub fn earlier_run(
    results: &Path,
    plan: &PlanRef,
    task: Option<&BatchTask>,
) -> Result<Option<CellResult>> {
    let Some(task) = task.filter(|t| t.restarts > 0) else {
        return Ok(None);
    };
    let (cells, _) = tagged::read_all(results)?;
    Ok(cells.into_iter().rev().map(|c| c.cell).find(|c| {
        c.status == CellStatus::Passed
            && c.plan.as_ref() == Some(plan)
            && c.task
                .as_ref()
                .is_some_and(|t| t.engine == task.engine && t.job == task.job)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CELL: &str = include_str!(
        "../../../../tests/fixtures/report/lab/cells/6.1-cloud__none__1795500718528-17793-0-vm.json"
    );

    fn task(job: &str, restarts: u32) -> BatchTask {
        BatchTask {
            engine: "slurm".into(),
            node: "node2".into(),
            job: job.into(),
            restarts,
        }
    }

    #[test]
    fn only_a_requeued_task_finds_its_own_earlier_passed_cell() {
        let dir = std::env::temp_dir().join(format!("lsmpmon-requeue-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cells")).unwrap();
        let plan = PlanRef {
            id: "abc".into(),
            index: 3,
        };
        let mut cell: CellResult = serde_json::from_str(CELL).unwrap();
        cell.plan = Some(plan.clone());
        cell.task = Some(task("7_3", 0));
        let text = serde_json::to_string(&cell).unwrap();
        std::fs::write(tagged::cell_path(&dir, &cell.id), text).unwrap();

        let found = earlier_run(&dir, &plan, Some(&task("7_3", 1))).unwrap();
        assert_eq!(found.map(|c| c.id), Some(cell.id.clone()));
        // Not requeued, another task of the cell (a --resume), another cell.
        assert!(earlier_run(&dir, &plan, Some(&task("7_3", 0)))
            .unwrap()
            .is_none());
        assert!(earlier_run(&dir, &plan, Some(&task("9_3", 1)))
            .unwrap()
            .is_none());
        let other = PlanRef {
            id: "abc".into(),
            index: 4,
        };
        assert!(earlier_run(&dir, &other, Some(&task("7_3", 1)))
            .unwrap()
            .is_none());
        // A failed earlier run is run again.
        cell.status = CellStatus::Failed;
        let text = serde_json::to_string(&cell).unwrap();
        std::fs::write(tagged::cell_path(&dir, &cell.id), text).unwrap();
        assert!(earlier_run(&dir, &plan, Some(&task("7_3", 1)))
            .unwrap()
            .is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
