/* An ordinary MPI program, as people have them: ranks 0 and 1 bounce
 * messages of 8 B to 1 MiB (1 MiB goes by rendezvous), each side checks
 * every byte it receives against the pattern the other wrote, then an
 * allreduce. Prints one line per size and the total of mismatches; exit 1
 * on any mismatch. tests/ibverbs/ucx_test.py runs it over rocemu through
 * Open MPI's UCX layer. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char Pattern(int k, int i) {
  return (unsigned char)(k * 7 + i);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static const int kSizes[] = {8, 4096, 65536, 1 << 20};
  int bad = 0;
  for (int s = 0; s < 4; ++s) {
    const int len = kSizes[s];
    const int iters = len > 65536 ? 50 : 500;
    unsigned char* buf = malloc(len);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      if (rank == 0) {
        for (int k = 0; k < len; ++k) buf[k] = Pattern(k, i);
        MPI_Send(buf, len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < len; ++k) {
          if (buf[k] != (unsigned char)(Pattern(k, i) + 1)) {
            ++bad;
            break;
          }
        }
      } else if (rank == 1) {
        MPI_Recv(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < len; ++k) {
          if (buf[k] != Pattern(k, i)) ++bad;
          buf[k] = (unsigned char)(Pattern(k, i) + 1);
        }
        MPI_Send(buf, len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
      }
    }
    if (rank == 0) {
      printf("size %d: %.2f us one-way\n", len,
             (MPI_Wtime() - t0) / iters / 2 * 1e6);
    }
    free(buf);
  }
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  double one = rank + 1.0, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("mismatches %d, allreduce %.0f\n", total, sum);
  MPI_Finalize();
  return total != 0;
}
