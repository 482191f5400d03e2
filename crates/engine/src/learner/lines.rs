//! A renderer for burn-train's `Learner` that writes a line every tenth of the run, for logs
//! and terminals alike (burn-train's own renderer without its terminal dashboard prints every
//! batch).

use std::io::Write;

use burn_train::LearnerSummary;
use burn_train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use burn_train::metric::MetricDefinition;
use burn_train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};

/// `label: epoch E/N` to standard error at the end of every tenth of the epochs (and the last);
/// burn-train still logs every metric under the training directory.
#[derive(Debug, Default)]
pub struct EpochLines {
    label: String,
    epochs: usize,
    /// Epochs done.
    done: usize,
    split: String,
}

impl EpochLines {
    /// A renderer for `SupervisedTraining::renderer`.
    pub fn boxed() -> Box<dyn MetricsRenderer> {
        Box::new(Self::default())
    }
}

impl TrainingProgressLogger for EpochLines {
    fn start(&mut self, epochs: usize, first: usize, _: Option<usize>, label: Option<&str>) {
        self.label = label.unwrap_or("training").to_string();
        self.epochs = epochs;
        // burn-train numbers epochs from 1.
        self.done = first.saturating_sub(1);
    }

    fn update_epoch(&mut self, _: usize) {}

    fn start_split(&mut self, split: &str, _: usize) {
        self.split = split.to_string();
    }

    fn update_split(&mut self, _: usize) {}

    fn end_split(&mut self) {
        if self.split == "train" {
            self.done += 1;
            let (label, e, n) = (&self.label, self.done, self.epochs);
            if e.is_multiple_of((n / 10).max(1)) || e == n {
                let _ = writeln!(std::io::stderr(), "{label}: epoch {e}/{n}");
            }
        }
    }

    fn end(&mut self) {}

    fn log_event_training(&mut self, _: String) {}
}

impl EvaluationProgressLogger for EpochLines {
    fn start_global_progress(&mut self, _: usize) {}

    fn start_test(&mut self, _: &str, _: usize) {}

    fn update_test_progress(&mut self, _: usize) {}

    fn end_test(&mut self) {}

    fn end_global_progress(&mut self) {}

    fn log_event_evaluation(&mut self, _: String) {}
}

impl MetricsRendererTraining for EpochLines {
    fn update_train(&mut self, _: MetricState) {}

    fn update_valid(&mut self, _: MetricState) {}

    fn on_train_end(
        &mut self,
        _: Option<LearnerSummary>,
    ) -> Result<(), Box<dyn core::error::Error>> {
        Ok(())
    }
}

impl MetricsRendererEvaluation for EpochLines {
    fn update_test(&mut self, _: EvaluationName, _: MetricState) {}

    fn on_test_end(
        &mut self,
        _: Option<LearnerSummary>,
    ) -> Result<(), Box<dyn core::error::Error>> {
        Ok(())
    }
}

impl MetricsRenderer for EpochLines {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, _: MetricDefinition) {}
}
