#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| litehit_fuzz::targets::trace_bailian(data));
