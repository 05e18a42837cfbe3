//! Appendix D, "How this book is built and verified": the score of the
//! mutation testing that `cargo xtask mutants` committed in
//! `listings/data/mutants.tsv`, and whether each file's result is current.
//!
//! The file holds one row per listings file and shard: the mutants of the
//! functions inside the file's anchors that a test caught, that no test
//! caught (missed), that did not compile (unviable) or whose tests ran out
//! of time, with a hash of the file they were made from. A row whose hash
//! is not the file's hash today is stale: the file changed since, and its
//! score says nothing about the new code until the command runs again.

use crate::data_file::read;
use std::fmt::Write;

/// The committed results, from the crate's directory.
pub const MUTANTS: &str = "data/mutants.tsv";
/// The missed mutants that cannot change what their listing promises,
/// each with the reason, written by hand after reading the mutant.
pub const EQUIVALENT: &str = "data/equivalent_mutants.tsv";
/// The columns of [`EQUIVALENT`].
pub const EQUIVALENT_HEADER: &str = "file\tmutant\treason";
/// The columns of the committed results (as `cargo xtask mutants` writes).
pub const HEADER: &str = "file\thash\tshard\tcaught\tmissed\tunviable\t\
                          timeout\tseconds\tmachine\tdate\tcommand";

/// One file's mutants, summed over the shards that ran on one version.
#[derive(Clone, Debug, PartialEq)]
pub struct FileScore {
    /// The path from the workspace root, `listings/src/...`.
    pub file: String,
    pub hash: u64,
    /// The shards that ran, of how many.
    pub shards: (usize, usize),
    pub caught: usize,
    pub missed: usize,
    pub unviable: usize,
    pub timeout: usize,
    pub seconds: u64,
    pub machine: String,
    pub date: String,
    /// The names of the mutants no test caught.
    pub missed_names: Vec<String>,
    /// The missed mutants that are equivalent: (name, why).
    pub equivalent: Vec<(String, String)>,
}

impl FileScore {
    /// Mutants that compiled: caught, missed or timed out.
    pub fn viable(&self) -> usize {
        self.caught + self.missed + self.timeout
    }

    /// The share of viable mutants a test caught (a timeout is not counted
    /// as caught), equivalent mutants set aside, in [0, 1]; `None` if no
    /// mutant that could change behaviour compiled.
    pub fn score(&self) -> Option<f64> {
        let viable = self.viable() - self.equivalent.len();
        (viable > 0).then(|| self.caught as f64 / viable as f64)
    }

    /// Whether the file today is the one its mutants were made from.
    pub fn current(&self) -> bool {
        let path = format!("{}/../{}", env!("CARGO_MANIFEST_DIR"), self.file);
        std::fs::read(path).is_ok_and(|bytes| content_hash(&bytes) == self.hash)
    }
}

/// FNV-1a, 64 bits, the hash `cargo xtask mutants` records for a file.
pub fn content_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The results in `text`, one entry per file, its shards summed.
pub fn parse(text: &str) -> Result<Vec<FileScore>, String> {
    let (comments, records) = read(text, HEADER)?;
    let mut files: Vec<FileScore> = vec![];
    for r in &records {
        let shard = r.fields[2].split_once('/').ok_or(r.bad("shard"))?;
        let n: usize = shard.1.parse().map_err(|_| r.bad("shard"))?;
        let hash =
            u64::from_str_radix(r.fields[1], 16).map_err(|_| r.bad("hash"))?;
        let row = FileScore {
            file: r.fields[0].to_string(),
            hash,
            shards: (1, n),
            caught: r.get(3, "caught")?,
            missed: r.get(4, "missed")?,
            unviable: r.get(5, "unviable")?,
            timeout: r.get(6, "timeout")?,
            seconds: r.get(7, "seconds")?,
            machine: r.fields[8].to_string(),
            date: r.fields[9].to_string(),
            missed_names: vec![],
            equivalent: vec![],
        };
        match files.iter_mut().find(|f| f.file == row.file) {
            Some(f) if f.hash == hash && f.shards.1 == n => {
                f.shards.0 += 1;
                f.caught += row.caught;
                f.missed += row.missed;
                f.unviable += row.unviable;
                f.timeout += row.timeout;
                f.seconds += row.seconds;
            }
            Some(_) => return Err(r.bad("second version of a file")),
            None => files.push(row),
        }
    }
    for c in &comments {
        let Some(m) = c.strip_prefix("missed: ") else {
            continue;
        };
        let (at, name) = m.split_once(": ").ok_or(format!("bad `{c}`"))?;
        let file = at.rsplit_once(' ').map_or(at, |(file, _)| file);
        let f = files.iter_mut().find(|f| f.file == file);
        f.ok_or(format!("missed mutant of no row: `{c}`"))?
            .missed_names
            .push(name.to_string());
    }
    Ok(files)
}

/// Attach the equivalent mutants in `text` (see [`EQUIVALENT`]) to their
/// files; an entry that is not a missed mutant of a file's committed row
/// (the file reran, or the name is wrong) is an error naming it.
pub fn attach_equivalents(
    files: &mut [FileScore],
    text: &str,
) -> Result<(), String> {
    let (_, records) = read(text, EQUIVALENT_HEADER)?;
    for r in &records {
        let [file, mutant, reason] = [0, 1, 2].map(|i| r.fields[i]);
        let f = files
            .iter_mut()
            .find(|f| {
                f.file == file && f.missed_names.iter().any(|m| m == mutant)
            })
            .ok_or(format!("not a missed mutant of {file}: `{mutant}`"))?;
        if reason.trim().is_empty() {
            return Err(format!("no reason for `{mutant}`"));
        }
        f.equivalent.push((mutant.to_string(), reason.to_string()));
    }
    Ok(())
}

/// The committed results, with their equivalent mutants.
pub fn committed() -> Vec<FileScore> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{dir}/{MUTANTS}"))
        .expect("mutants.tsv is committed");
    let mut files = parse(&text).expect("mutants.tsv reads");
    let equivalent = std::fs::read_to_string(format!("{dir}/{EQUIVALENT}"))
        .expect("equivalent_mutants.tsv is committed");
    attach_equivalents(&mut files, &equivalent)
        .expect("every equivalent mutant is a missed one");
    files
}

/// Appendix D's table: per file, the mutants of its listings caught,
/// missed, unviable and timed out, the score, and whether the result is
/// current; then where and when it ran and how long it took.
pub fn mutation_score() -> String {
    let files = committed();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<40} {:>6} {:>6} {:>6} {:>8} {:>7} {:>6}  result",
        "file (listings/src/)",
        "caught",
        "missed",
        "equiv.",
        "unviable",
        "timeout",
        "score"
    );
    for f in &files {
        let name = f.file.trim_start_matches("listings/src/");
        let score = f
            .score()
            .map_or("-".into(), |s| format!("{:.0}%", 100.0 * s));
        let state = match (f.current(), f.shards) {
            (false, _) => "stale: the file changed since".to_string(),
            (true, (k, n)) if k < n => format!("current, {k} of {n} shards"),
            (true, _) => "current".to_string(),
        };
        let _ = writeln!(
            out,
            "{name:<40} {:>6} {:>6} {:>6} {:>8} {:>7} {score:>6}  {state}",
            f.caught,
            f.missed,
            f.equivalent.len(),
            f.unviable,
            f.timeout
        );
    }
    for f in &files {
        for (mutant, why) in &f.equivalent {
            let mutant = mutant.trim_start_matches("listings/src/");
            let _ = writeln!(out, "equivalent: {mutant}: {why}");
        }
    }
    let minutes = files.iter().map(|f| f.seconds).sum::<u64>() as f64 / 60.0;
    let mut machines: Vec<&str> =
        files.iter().map(|f| f.machine.as_str()).collect();
    machines.dedup();
    let mut dates: Vec<&str> = files.iter().map(|f| f.date.as_str()).collect();
    dates.sort_unstable();
    dates.dedup();
    let _ = write!(
        out,
        "{} of the {} files with listings run so far: {minutes:.0} minutes \
         on {}, {}, by cargo xtask mutants",
        files.len(),
        listing_files(),
        machines.join(", "),
        dates.join(", ")
    );
    out
}

/// How many files under listings/src hold a listing (an anchor).
pub fn listing_files() -> usize {
    let mut dirs = vec![format!("{}/src", env!("CARGO_MANIFEST_DIR"))];
    let mut count = 0;
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).into_iter().flatten().flatten();
        for path in entries.map(|e| e.path()) {
            if path.is_dir() {
                dirs.push(path.to_string_lossy().into_owned());
            } else if std::fs::read_to_string(&path)
                .is_ok_and(|s| s.lines().any(|l| l.starts_with("// ANCHOR:")))
            {
                count += 1;
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_hash_is_the_one_cargo_xtask_mutants_records() {
        // FNV-1a 64's published test vectors, as xtask's test checks them.
        assert_eq!(content_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(content_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(content_hash(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_committed_mutation_results_say_which_files_are_current() {
        // Every row names a listings file with an anchor, counts as many
        // missed mutants as it names, and is reported current exactly when
        // its hash is the file's hash today (printed: which are stale).
        let files = committed();
        assert!(!files.is_empty());
        for f in &files {
            let path = format!("{}/../{}", env!("CARGO_MANIFEST_DIR"), f.file);
            let source = std::fs::read(&path).expect("a listings file");
            let text = String::from_utf8_lossy(&source);
            assert!(text.lines().any(|l| l.starts_with("// ANCHOR:")));
            assert_eq!(f.missed, f.missed_names.len(), "{}", f.file);
            let today = content_hash(&source);
            assert_eq!(f.current(), f.hash == today, "{}", f.file);
            let mut changed = f.clone();
            changed.hash ^= 1;
            assert!(!changed.current(), "{}", f.file);
            eprintln!(
                "{}: {}",
                f.file,
                if f.current() { "current" } else { "stale" }
            );
        }
        let table = mutation_score();
        assert!(table.contains("cargo xtask mutants"), "{table}");
        let equivalent: usize = files.iter().map(|f| f.equivalent.len()).sum();
        let lines = files.len() + equivalent + 2;
        assert_eq!(table.lines().count(), lines, "{table}");
    }

    #[test]
    fn shards_of_one_version_add_up_and_two_versions_are_an_error() {
        let row = |hash: &str, shard: &str, caught: usize| {
            format!(
                "listings/src/causal.rs\t{hash}\t{shard}\t{caught}\t1\t2\t0\t\
                 60\tcpu\t2026-12-02\tcargo xtask mutants"
            )
        };
        let text = format!(
            "# missed: listings/src/causal.rs 0/2: causal.rs:1:1: replace + \
             with -\n# missed: listings/src/causal.rs 1/2: x\n{HEADER}\n{}\n{}\n",
            row("00000000000000ab", "0/2", 3),
            row("00000000000000ab", "1/2", 4)
        );
        let files = parse(&text).unwrap();
        assert_eq!(files.len(), 1);
        let f = &files[0];
        assert_eq!(
            (f.shards, f.caught, f.missed, f.seconds),
            ((2, 2), 7, 2, 120)
        );
        assert_eq!(f.missed_names.len(), 2);
        assert_eq!(f.score(), Some(7.0 / 9.0));
        let two = format!(
            "{HEADER}\n{}\n{}\n",
            row("00000000000000ab", "0/2", 3),
            row("00000000000000ac", "1/2", 4)
        );
        assert!(parse(&two).is_err());
    }

    #[test]
    fn an_equivalent_mutant_must_be_a_missed_one_with_a_reason() {
        // Set aside, it leaves the score's count of viable mutants; an
        // entry naming a mutant no row missed, or giving no reason, is an
        // error (so a file that reran leaves no stale entry behind).
        let text = format!(
            "# missed: listings/src/causal.rs 0/1: m1\n{HEADER}\n\
             listings/src/causal.rs\t00000000000000ab\t0/1\t9\t1\t2\t0\t\
             60\tcpu\t2026-12-02\tcargo xtask mutants\n"
        );
        let entry = |mutant: &str, why: &str| {
            format!(
                "{EQUIVALENT_HEADER}\nlistings/src/causal.rs\t{mutant}\t{why}\n"
            )
        };
        let mut files = parse(&text).unwrap();
        assert_eq!(files[0].score(), Some(0.9));
        attach_equivalents(&mut files, &entry("m1", "ties")).unwrap();
        assert_eq!(files[0].score(), Some(1.0));
        let mut files = parse(&text).unwrap();
        assert!(attach_equivalents(&mut files, &entry("m2", "ties")).is_err());
        assert!(attach_equivalents(&mut files, &entry("m1", " ")).is_err());
        // The committed entries all attach.
        let _ = committed();
    }
}
