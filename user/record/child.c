#include "record/child.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int child__spawn(struct child *c, char **argv)
{
	int go[2], exec_err[2];
	pid_t pid;

	c->go_fd = c->exec_err_fd = -1;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(exec_err, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char byte;
		int e;

		close(go[1]);
		close(exec_err[0]);
		if (read(go[0], &byte, 1) != 1)
			_exit(127); /* hprof failed to start sampling */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		e = errno;
		if (write(exec_err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(exec_err[1]);
	c->pid = pid;
	c->go_fd = go[1];
	c->exec_err_fd = exec_err[0];
	return 0;
}

int child__release(struct child *c, const char *name)
{
	int e = 0;
	ssize_t n;

	if (write(c->go_fd, "g", 1) != 1)
		return -errno;
	n = read(c->exec_err_fd, &e, sizeof(e));
	child__close_pipes(c);
	if (n == sizeof(e)) {
		fprintf(stderr, "hprof: cannot run '%s': %s\n", name, strerror(e));
		waitpid(c->pid, &c->status, 0);
		c->exited = true;
		return -e;
	}
	return 0;
}

bool child__has_exited(struct child *c)
{
	if (!c->pid || c->exited)
		return c->exited;
	if (waitpid(c->pid, &c->status, WNOHANG) == c->pid)
		c->exited = true;
	return c->exited;
}

void child__wait(struct child *c, volatile sig_atomic_t *forward)
{
	if (*forward) {
		kill(c->pid, *forward);
		*forward = 0;
	}
	while (!c->exited) {
		if (waitpid(c->pid, &c->status, 0) == c->pid) {
			c->exited = true;
		} else if (errno == EINTR && *forward) {
			kill(c->pid, *forward);
			*forward = 0;
		} else if (errno != EINTR) {
			break;
		}
	}
}

int child__exit_status(const struct child *c)
{
	if (WIFEXITED(c->status))
		return WEXITSTATUS(c->status);
	if (WIFSIGNALED(c->status))
		return 128 + WTERMSIG(c->status);
	return 1;
}

void child__close_pipes(struct child *c)
{
	if (c->go_fd >= 0)
		close(c->go_fd);
	if (c->exec_err_fd >= 0)
		close(c->exec_err_fd);
	c->go_fd = c->exec_err_fd = -1;
}

void child__catch_hangup(void (*handler)(int))
{
	struct sigaction old, sa = { .sa_handler = handler };

	if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		return;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
}
