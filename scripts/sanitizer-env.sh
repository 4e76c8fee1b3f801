# Sourced by asan-check.sh: the sanitizer runtime options of the ASan + UBSan test run.
# halt_on_error/abort_on_error: a report fails the test process, not only its log.
# detect_leaks=1: LeakSanitizer runs at every process's exit, under mpirun too (it stops the
# process's threads with ptrace from a task of its own; it reported PMIx's leaks there), with the
# suppressions of scripts/lsan.supp.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$here/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
