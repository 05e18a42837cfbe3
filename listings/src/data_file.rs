//! The book's committed data files: `#` lines saying how the file was
//! made, a tab-separated header, then one record per line.

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Where a retraining command writes its data file `name`: the committed
/// `listings/data/NAME` when asked with `--commit`, else `target/NAME`
/// in the workspace, so a reader's run never changes what the book reads.
/// The folder is made if it is missing (a fresh clone has no `target/`).
pub fn destination(name: &str, commit: bool) -> PathBuf {
    let listings = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = match commit {
        true => listings.join("data"),
        false => listings.join("..").join("target"),
    };
    std::fs::create_dir_all(&dir).expect("the output's folder can be made");
    dir.join(name)
}

/// The lines of provenance every retrained file opens with after its
/// title: the machine, its threads and the time the runs took; the date.
pub fn provenance(
    machine: &crate::measure::Machine,
    wall_minutes: f64,
    cpu_minutes: Option<f64>,
) -> [String; 2] {
    [
        format!(
            "Machine: {} ({} threads); {}.",
            machine.cpu,
            machine.cores,
            took(wall_minutes, cpu_minutes)
        ),
        format!("Date: {}", machine.date),
    ]
}

/// A data file: each comment after `# `, the header, the records' lines.
pub fn write(
    comments: &[String],
    header: &str,
    lines: impl IntoIterator<Item = String>,
) -> String {
    let mut out = String::new();
    for c in comments {
        let _ = writeln!(out, "# {c}");
    }
    let _ = writeln!(out, "{header}");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// How long the runs behind a data file took, as its provenance line
/// says it: "W minutes wall clock, C minutes of CPU time".
pub fn took(wall_minutes: f64, cpu_minutes: Option<f64>) -> String {
    let cpu = cpu_minutes.map_or("CPU time unknown".to_string(), |c| {
        format!("{c:.1} minutes of CPU time")
    });
    format!("{wall_minutes:.1} minutes wall clock, {cpu}")
}

/// The wall-clock minutes a provenance line records (see [`took`]).
pub fn wall_minutes(line: &str) -> Option<f64> {
    let (before, _) = line.split_once(" minutes wall clock")?;
    before.rsplit(' ').next()?.parse().ok()
}

/// The fields of one record, and a way to say what is wrong with it.
#[derive(Debug)]
pub struct Fields<'a> {
    pub number: usize,
    pub line: &'a str,
    pub fields: Vec<&'a str>,
}

impl Fields<'_> {
    /// Field `i` parsed, or an error naming the line and `what`.
    pub fn get<T: std::str::FromStr>(
        &self,
        i: usize,
        what: &str,
    ) -> Result<T, String> {
        self.fields[i].parse().map_err(|_| self.bad(what))
    }

    /// An error naming the line and `what` is wrong in it.
    pub fn bad(&self, what: &str) -> String {
        format!("line {}: bad {what} in `{}`", self.number, self.line)
    }
}

/// Read a data file: its comments and its records' fields, each record
/// with as many fields as `header` has columns.
pub fn read<'a>(
    text: &'a str,
    header: &str,
) -> Result<(Vec<String>, Vec<Fields<'a>>), String> {
    let columns = header.split('\t').count();
    let (mut comments, mut records, mut seen) = (Vec::new(), Vec::new(), false);
    for (i, line) in text.lines().enumerate() {
        if let Some(c) = line.strip_prefix('#') {
            comments.push(c.trim().to_string());
        } else if !seen {
            if line != header {
                return Err(format!("line {}: expected `{header}`", i + 1));
            }
            seen = true;
        } else if !line.trim().is_empty() {
            let fields = Fields {
                number: i + 1,
                line,
                fields: line.split('\t').collect(),
            };
            if fields.fields.len() != columns {
                return Err(fields.bad("number of fields"));
            }
            records.push(fields);
        }
    }
    match seen {
        true => Ok((comments, records)),
        false => Err("no header line".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_what_was_written_and_a_bad_line_is_named() {
        let text = write(
            &["made by hand".to_string()],
            "a\tb",
            ["1\tx".to_string(), "2\ty".to_string()],
        );
        let (comments, records) = read(&text, "a\tb").unwrap();
        assert_eq!(comments, ["made by hand"]);
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].get::<u32>(0, "a"), Ok(2));
        assert!(
            records[1]
                .get::<u32>(1, "b")
                .unwrap_err()
                .contains("line 4")
        );
        assert!(read("a\tb\n1\n", "a\tb").unwrap_err().contains("fields"));
        assert!(read("x\n", "a\tb").unwrap_err().contains("expected"));
        assert!(read("# only\n", "a\tb").unwrap_err().contains("header"));
    }

    #[test]
    fn the_wall_minutes_of_a_provenance_line_read_back() {
        for (wall, cpu) in
            [(13.4, Some(13.3)), (0.5, None), (110.6, Some(82.8))]
        {
            let line =
                format!("Machine: a CPU (2 threads); {}.", took(wall, cpu));
            assert_eq!(wall_minutes(&line), Some(wall), "{line}");
        }
        assert_eq!(wall_minutes("Machine: a CPU"), None);
    }
}
