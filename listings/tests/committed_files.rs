//! The committed results: each file names the command that made it, the
//! machine and the date, as the introduction says. (Their contents are
//! checked beside the code that reads them.)

use listings::after::recall::study as recall;
use listings::after::recall::zoology_study as mqar;
use listings::after::spectrum::tracking::study as tracking;
use listings::appendix::speed::committed::{BenchTable, CrossoverData};
use listings::paper::retrieval::study as retrieval;

#[test]
fn every_committed_file_records_its_command_machine_and_date() {
    for (head, command) in [
        (retrieval::committed().0, "cargo xtask retrieval"),
        (recall::committed().0, "cargo xtask recall"),
        (tracking::committed().0, "cargo xtask tracking --commit"),
        (mqar::committed().0, "cargo xtask mqar --commit"),
    ] {
        let made_by = format!("Made by `{command}`");
        assert!(head.iter().any(|c| c.starts_with(&made_by)), "{head:?}");
        assert!(head.iter().any(|c| c.starts_with("Machine: ")), "{command}");
        let date = head.iter().find_map(|c| c.strip_prefix("Date: "));
        let date = date.unwrap_or_else(|| panic!("{command}: no date"));
        assert_eq!(date.len(), 10, "{command}: {date}");
        assert!(date.starts_with("20"), "{command}: {date}");
    }
    let bench = BenchTable::committed();
    assert!(bench.command.starts_with("cargo xtask bench"));
    assert!(!bench.machine.is_empty() && bench.date.len() == 10);
    let crossover = CrossoverData::committed();
    assert!(crossover.command.starts_with("cargo xtask bench crossover"));
    assert!(!crossover.machine.is_empty() && crossover.date.len() == 10);
}
