/* The command hprof profiles (`hprof -- COMMAND`): forked before sampling starts and held
 * on a pipe until the sampler is ready, so that its first instructions are profiled too. */
#ifndef HPROF_RECORD_CHILD_H
#define HPROF_RECORD_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct child {
	pid_t pid;       /* 0: no command */
	int status;      /* as waitpid gives it, once exited */
	bool exited;
	int go_fd;       /* held until written: the child waits on its other end */
	int exec_err_fd; /* the child's errno when exec fails (close-on-exec otherwise) */
};

/* Forks argv, held. Returns 0 or -errno. */
int child__spawn(struct child *c, char **argv);
/* Lets the held command run; returns 0 once it has exec'd, or -errno after printing why
 * it could not. */
int child__release(struct child *c, const char *name);
bool child__has_exited(struct child *c);
/* Waits for the command to end, passing on every signal that *forward names (then
 * cleared). */
void child__wait(struct child *c, volatile sig_atomic_t *forward);
/* The command's exit status as a shell reports it. */
int child__exit_status(const struct child *c);
/* Closes the pipes: a command still held sees EOF and exits 127. */
void child__close_pipes(struct child *c);
/* Has handler catch SIGHUP unless it was ignored when hprof started (nohup): a hangup is then
 * meant to stop neither hprof nor its command, which inherits the ignored signal. SIGINT
 * and SIGTERM are caught whatever they were: shells start background jobs with SIGINT
 * ignored, and an interrupt is how a user stops hprof (the command gets them back at their
 * defaults). */
void child__catch_hangup(void (*handler)(int));

#endif
