//! Task vocabulary shared by both task models (the 2025-11-25 tasks utility
//! and the 2026-07-28 tasks extension): the status words and the
//! extension's identifier.

/// `io.modelcontextprotocol/tasks`: the 2026-07-28 tasks extension, as a
/// key of `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A task's status (`TaskStatus`); the same words in both models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    const ALL: [TaskStatus; 5] = [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// The status named `s`, if it is one.
    pub fn parse(s: &str) -> Option<TaskStatus> {
        TaskStatus::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Completed, failed and cancelled are final: a task in one never
    /// changes status again (2025-11-25 `tasks-terminal-immutable`).
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_the_final_three_are_terminal() {
        for s in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(TaskStatus::parse("done"), None);
        let terminal: usize = TaskStatus::ALL.iter().filter(|s| s.is_terminal()).count();
        assert_eq!(terminal, 3);
        assert!(!TaskStatus::InputRequired.is_terminal());
    }
}
