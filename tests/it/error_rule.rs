//! The one error rule: a wrapped error is either `#[error(transparent)]` or a `#[source]`
//! kept out of its wrapper's own message, never both — so the CLI's message, every cause of
//! the chain joined by `: `, never says a cause twice. Each case below builds one wrapping
//! variant of a library error type around a cause with a unique text.

use std::error::Error;
use std::io;

use litehit_core::engine::pipeline::PipelineError;
use litehit_core::facts::file::FactsError;
use litehit_live::LiveError;
use litehit_report::QueryError;

const CAUSE: &str = "the-one-cause-text";

fn cause() -> io::Error {
    io::Error::other(CAUSE)
}

/// The CLI's message for `error`: the chain joined by `: `.
fn chain(error: &(dyn Error + 'static)) -> String {
    std::iter::successors(Some(error), |e| (*e).source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

#[test]
fn no_wrapper_repeats_its_cause() {
    let cases: Vec<(&str, Box<dyn Error + 'static>)> = vec![
        ("PipelineError::Io", Box::new(PipelineError::Io(cause()))),
        (
            "FactsError::Open",
            Box::new(FactsError::Open {
                path: "f.csv".into(),
                source: cause(),
            }),
        ),
        (
            "FactsError::Write",
            Box::new(FactsError::Write {
                path: "f.csv".into(),
                source: cause(),
            }),
        ),
        ("QueryError::Write", Box::new(QueryError::Write(cause()))),
        ("QueryError::Spawn", Box::new(QueryError::Spawn(cause()))),
        (
            "PipelineError::Spawn",
            Box::new(PipelineError::Spawn {
                thread: "parse",
                source: cause(),
            }),
        ),
        (
            "QueryError::Facts",
            Box::new(QueryError::Facts(FactsError::Read {
                path: "f.csv".into(),
                source: cause(),
            })),
        ),
        (
            "LiveError::Io",
            Box::new(LiveError::Io {
                doing: "starting",
                source: cause(),
            }),
        ),
        (
            "TuiError::Io",
            Box::new(litehit_tui::TuiError::Io {
                doing: "drawing",
                source: cause(),
            }),
        ),
    ];
    for (name, error) in &cases {
        let message = chain(error.as_ref());
        assert_eq!(
            message.matches(CAUSE).count(),
            1,
            "{name}: the cause appears once in {message:?}"
        );
    }
}
