//! The one line a failed command ends with: the error and its causes, each
//! said once.
//!
//! An error's message often already holds its cause's (`store x: file is not
//! a database`), and a library's error may hold it again in its own source
//! (`Error code 26: file is not a database`). Printed as a plain chain that
//! reads `store x: file is not a database: file is not a database: Error code
//! 26: file is not a database`. Here a cause already said is left out, and a
//! cause that only adds to the one said last takes its place.

/// `error` and its causes, joined by `: `, each said once.
pub fn error_line(error: &anyhow::Error) -> String {
    let mut causes = error.chain().map(ToString::to_string);
    let mut line = causes.next().unwrap_or_default();
    let mut last = line.clone();
    for text in causes {
        if text.is_empty() || line.contains(&text) {
            // Said already.
        } else if !last.is_empty() && text.contains(&last) && line.ends_with(&last) {
            // The same cause, told more fully: in its place.
            line.truncate(line.len() - last.len());
            line.push_str(&text);
        } else {
            line.push_str(": ");
            line.push_str(&text);
        }
        last = text;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Cause {
        text: &'static str,
        source: Option<Box<Cause>>,
    }

    impl std::fmt::Display for Cause {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.text)
        }
    }

    impl std::error::Error for Cause {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.source.as_deref().map(|c| c as _)
        }
    }

    fn chain(texts: &[&'static str]) -> anyhow::Error {
        let mut error: Option<Box<Cause>> = None;
        for text in texts.iter().rev() {
            error = Some(Box::new(Cause {
                text,
                source: error,
            }));
        }
        anyhow::Error::new(*error.expect("one text at least"))
    }

    #[test]
    fn a_cause_the_message_holds_is_said_once() {
        let error = chain(&[
            "store sqlite:/tmp/x.db: file is not a database",
            "file is not a database",
            "Error code 26: file is not a database",
        ]);
        assert_eq!(
            error_line(&error),
            "store sqlite:/tmp/x.db: Error code 26: file is not a database"
        );
    }

    #[test]
    fn causes_the_message_does_not_hold_are_each_added() {
        let error = chain(&[
            "cannot listen on 1.2.3.4:80",
            "Address not available (os error 99)",
        ]);
        assert_eq!(
            error_line(&error),
            "cannot listen on 1.2.3.4:80: Address not available (os error 99)"
        );
        let error = chain(&["reading the corpus", "a.jsonl", "No such file or directory"]);
        assert_eq!(
            error_line(&error),
            "reading the corpus: a.jsonl: No such file or directory"
        );
    }

    #[test]
    fn a_lone_error_is_its_message() {
        assert_eq!(error_line(&chain(&["bad flag"])), "bad flag");
    }
}
