//! The study of "The rules in production": each new rule's chunkwise form
//! against its recurrence, at f64 and at f32 with extreme gates.
