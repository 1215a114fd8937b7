// make_synthetic_h5: writes one large HDF5 file (samples N x 3 x 64 x 64 uint8, labels N
// int64 in 0..99) to benchmark `lockstep shard --input hdf5:` on multi-GB inputs.
//
//   make_synthetic_h5 OUT.h5 N
#include <hdf5.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_synthetic_h5 OUT.h5 N\n");
    return 2;
  }
  const hsize_t n = std::stoull(argv[2]), per = 3 * 64 * 64, slab = 4096;
  const hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) return 1;
  const hsize_t dims[4] = {n, 3, 64, 64}, ldims[1] = {n};
  const hid_t space = H5Screate_simple(4, dims, nullptr), lspace = H5Screate_simple(1, ldims, nullptr);
  const hid_t d = H5Dcreate2(f, "images", H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t l = H5Dcreate2(f, "targets", H5T_STD_I64LE, lspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<unsigned char> buf(slab * per);
  std::vector<long long> labels(slab);
  for (hsize_t start = 0; start < n; start += slab) {
    const hsize_t k = std::min(slab, n - start);
    for (hsize_t i = 0; i < k * per; ++i) buf[i] = static_cast<unsigned char>((start * per + i) * 2654435761u >> 24);
    for (hsize_t i = 0; i < k; ++i) labels[i] = static_cast<long long>((start + i) * 7 % 100);
    const hsize_t s4[4] = {start, 0, 0, 0}, c4[4] = {k, 3, 64, 64}, s1[1] = {start}, c1[1] = {k};
    const hid_t ms = H5Screate_simple(4, c4, nullptr), ml = H5Screate_simple(1, c1, nullptr);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, s4, nullptr, c4, nullptr);
    H5Sselect_hyperslab(lspace, H5S_SELECT_SET, s1, nullptr, c1, nullptr);
    if (H5Dwrite(d, H5T_NATIVE_UINT8, ms, space, H5P_DEFAULT, buf.data()) < 0 ||
        H5Dwrite(l, H5T_NATIVE_LLONG, ml, lspace, H5P_DEFAULT, labels.data()) < 0)
      return 1;
    H5Sclose(ms);
    H5Sclose(ml);
  }
  H5Dclose(d);
  H5Dclose(l);
  H5Sclose(space);
  H5Sclose(lspace);
  H5Fclose(f);
  std::printf("wrote %s: %llu samples, %.2f GiB\n", argv[1], static_cast<unsigned long long>(n),
              static_cast<double>(n * per) / (1 << 30));
  return 0;
}
