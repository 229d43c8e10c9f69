// The glslc that vulkan-shaders-gen runs (its --glslc): hands the compile to a warm glslc process
// (glslc_fork_server.c, which says why) and exits with glslc's status, glslc's output on its own stdout and
// stderr. It starts that server when none answers, and runs glslc itself when none can be reached or the
// server's fork reports nothing, so a compile is never lost to the server.
//
// Environment (set by cmake/ggml-vulkan/CMakeLists.txt on the generator's command):
//   LIFELINE_GLSLC_REAL     Debian's glslc (required)
//   LIFELINE_GLSLC_PRELOAD  glslc_fork_server.so
//   LIFELINE_GLSLC_SOCKET   the server's abstract socket name
//   LIFELINE_GLSLC_DIRECT   when set and non-empty: run glslc itself (tests compare the two ways)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "glslc_socket.h"

static const char* real_glslc;

static void run_glslc_itself(char** argv) {
  argv[0] = (char*)real_glslc;
  execv(real_glslc, argv);
  fprintf(stderr, "glslc client: cannot run %s: %s\n", real_glslc, strerror(errno));
  _exit(127);
}

static int connect_to(const char* name) {
  struct sockaddr_un addr;
  socklen_t addr_len = glslc_socket_address(name, &addr);
  if (addr_len == 0) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct ucred peer;
  socklen_t peer_len = sizeof peer;
  // Abstract names are open to every local user: only a server of this user's gets the compile.
  if (connect(fd, (struct sockaddr*)&addr, addr_len) != 0 ||
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 || peer.uid != getuid()) {
    close(fd);
    return -1;
  }
  return fd;
}

// A glslc with the server preloaded, holding none of this process's descriptors (a pipe the build waits on
// would otherwise stay open until the server exits). It stays in the build's process group, so what stops the
// build (Ctrl-C, `lifeline test` ending a build beside its ctests) stops the server too.
static pid_t start_server(const char* name, const char* preload) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int null = open("/dev/null", O_RDWR);
  if (null < 0) _exit(1);
  dup2(null, 0);
  dup2(null, 1);
  dup2(null, 2);
  closefrom(3);
  // LD_PRELOAD splits its list at blanks and colons: a library in a folder with a blank (a checkout under "my
  // projects") is named by its file name and found through LD_LIBRARY_PATH, which splits at colons only.
  const char* slash = strrchr(preload, '/');
  if (slash && strpbrk(preload, " \t:")) {
    size_t dir_length = (size_t)(slash - preload);
    const char* old = getenv("LD_LIBRARY_PATH");
    char* path = malloc(dir_length + 2 + (old ? strlen(old) : 0));
    if (!path) _exit(1);
    memcpy(path, preload, dir_length);
    path[dir_length] = '\0';
    if (old && *old) strcat(strcat(path, ":"), old);
    setenv("LD_LIBRARY_PATH", path, 1);
    preload = slash + 1;
  }
  setenv("LD_PRELOAD", preload, 1);
  setenv("LIFELINE_GLSLC_SERVE", name, 1);
  char* argv[] = {(char*)real_glslc, NULL};
  execv(real_glslc, argv);
  _exit(127);
}

// Sends the request (glslc_fork_server.c describes it); returns glslc's status, or -1 when none came back.
static int compile_in_server(int fd, int argc, char** argv) {
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return -1;
  size_t length = strlen(cwd) + 1 + strlen(real_glslc) + 1;
  for (int i = 1; i < argc; ++i) length += strlen(argv[i]) + 1;
  char* request = malloc(length);
  if (!request) return -1;
  char* p = stpcpy(request, cwd) + 1;
  p = stpcpy(p, real_glslc) + 1;
  for (int i = 1; i < argc; ++i) p = stpcpy(p, argv[i]) + 1;

  uint32_t n = (uint32_t)length;
  int fds[2] = {1, 2};
  char control[CMSG_SPACE(sizeof fds)];
  memset(control, 0, sizeof control);
  struct iovec iov = {&n, sizeof n};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof n || glslc_write_full(fd, request, length) != 0) return -1;
  int32_t status;
  return glslc_read_full(fd, &status, sizeof status) == 0 ? status : -1;
}

int main(int argc, char** argv) {
  real_glslc = getenv("LIFELINE_GLSLC_REAL");
  if (!real_glslc || !*real_glslc) {
    fprintf(stderr, "glslc client: LIFELINE_GLSLC_REAL is not set (this program is run by the shared ggml-vulkan "
                    "shader build, cmake/ggml-vulkan/CMakeLists.txt)\n");
    return 2;
  }
  const char* name = getenv("LIFELINE_GLSLC_SOCKET");
  const char* preload = getenv("LIFELINE_GLSLC_PRELOAD");
  const char* direct = getenv("LIFELINE_GLSLC_DIRECT");
  if ((direct && *direct) || !name || !*name || !preload || !*preload) run_glslc_itself(argv);

  int fd = connect_to(name);
  if (fd < 0) {
    pid_t server = start_server(name, preload);
    // The server answers once glslang is warm (about 0.1 s). One that has exited (another client's server
    // holds the name, or it could not start) gets one more try; after 5 s, glslc runs here instead.
    int exited = server < 0;
    for (int waited_ms = 0; fd < 0 && !exited && waited_ms < 5000; waited_ms += 10) {
      nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
      exited = waitpid(server, NULL, WNOHANG) != 0;
      fd = connect_to(name);
    }
    if (fd < 0) fd = connect_to(name);
  }
  if (fd < 0) run_glslc_itself(argv);
  int status = compile_in_server(fd, argc, argv);
  if (status < 0) run_glslc_itself(argv);
  return status;
}
