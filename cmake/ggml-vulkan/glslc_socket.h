// What glslc_client.c and glslc_fork_server.c share: the server's address and whole reads and writes on the
// connection (glslc_fork_server.c describes the request and the answer).
#ifndef LIFELINE_GLSLC_SOCKET_H_
#define LIFELINE_GLSLC_SOCKET_H_

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

// The abstract UNIX socket `name` (sun_path[0] == '\0') in *addr; its length, or 0 when the name is too long.
static inline socklen_t glslc_socket_address(const char* name, struct sockaddr_un* addr) {
  size_t n = strlen(name);
  memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (n + 1 > sizeof addr->sun_path) return 0;
  memcpy(addr->sun_path + 1, name, n);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

// Reads exactly n bytes: 0, or -1 at an error or end of file first.
static inline int glslc_read_full(int fd, void* buf, size_t n) {
  char* p = buf;
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

// Writes exactly n bytes: 0, or -1 at an error.
static inline int glslc_write_full(int fd, const void* buf, size_t n) {
  const char* p = buf;
  while (n > 0) {
    ssize_t put = write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return -1;
    p += put;
    n -= (size_t)put;
  }
  return 0;
}

#endif  // LIFELINE_GLSLC_SOCKET_H_
