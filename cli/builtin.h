/* SPDX-License-Identifier: MIT */
#ifndef VMPT_BUILTIN_H
#define VMPT_BUILTIN_H

/* One function per subcommand, in cli/builtin-NAME.c, the way perf keeps
 * builtin-*.c.  argv[0] is the subcommand name.  Returns the exit status.
 */
int cmd_dump(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_guest(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_correlate(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);

#endif
