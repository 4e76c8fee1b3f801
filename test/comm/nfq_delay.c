/* Delays every packet of a netfilter queue by a fixed time: a userspace stand-in for netem's
 * delay, which the test machines' kernel lacks. Packets are held in arrival order and accepted
 * (one batch verdict for all that are due) when their time comes.
 *   nfq_delay QUEUE DELAY_US     (inside the namespace whose iptables rule sends to QUEUE) */
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#define HELD 65536 /* at most this many packets in flight through the delay */

static uint32_t ids[HELD];
static int64_t due_ns[HELD];
static unsigned head, tail; /* held packets: [head, tail) modulo HELD */
static int64_t delay_ns;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int on_packet(struct nfq_q_handle* q, struct nfgenmsg* m, struct nfq_data* d, void* data) {
  (void)m;
  (void)data;
  struct nfqnl_msg_packet_hdr* h = nfq_get_msg_packet_hdr(d);
  if (!h) return 0;
  const uint32_t id = ntohl(h->packet_id);
  if (tail - head == HELD) return nfq_set_verdict(q, id, NF_ACCEPT, 0, NULL); /* full: no delay */
  ids[tail % HELD] = id;
  due_ns[tail % HELD] = now_ns() + delay_ns;
  ++tail;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: nfq_delay QUEUE DELAY_US\n");
    return 2;
  }
  const int queue = atoi(argv[1]);
  delay_ns = atoll(argv[2]) * 1000;
  struct nfq_handle* h = nfq_open();
  if (!h) {
    perror("nfq_open");
    return 1;
  }
  struct nfq_q_handle* q = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (!q || nfq_set_mode(q, NFQNL_COPY_META, 0) < 0) {
    perror("nfq_create_queue");
    return 1;
  }
  nfq_set_queue_maxlen(q, HELD);
  const int fd = nfq_fd(h);
  int rcvbuf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  char buf[4096];
  for (;;) {
    int timeout_ms = -1;
    if (head != tail) {
      const int64_t wait = due_ns[head % HELD] - now_ns();
      timeout_ms = wait <= 0 ? 0 : (int)((wait + 999999) / 1000000);
    }
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) > 0) {
      const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) nfq_handle_packet(h, buf, (int)n);
      else if (n < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR) break;
    }
    /* Accept every packet that is due, with one verdict for the last of them. */
    const int64_t now = now_ns();
    uint32_t last = 0;
    int any = 0;
    while (head != tail && due_ns[head % HELD] <= now) {
      last = ids[head % HELD];
      any = 1;
      ++head;
    }
    if (any) nfq_set_verdict_batch(q, last, NF_ACCEPT);
  }
  nfq_destroy_queue(q);
  nfq_close(h);
  return 0;
}
