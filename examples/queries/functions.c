// User functions for `tessera query --functions examples/queries/functions.c`: plain
// kernel-language functions of scalars, compiled into the query's pipeline and inlined.
#include <stdbool.h>

// Revenue of a sale after its discount.
double revenue(long qty, double price, double discount) {
    return qty * price * (1.0 - discount);
}

// Price per unit of quantity above a floor: divides by `qty - floor`, so a row where they
// are equal is a run-time error that names the row.
double per_unit_above(double price, long qty, long floor) {
    return price / (qty - floor) + (qty - floor) / (qty - floor);
}

// Large sales in a given store band.
bool big(long qty, long store) {
    return qty >= 30 && store % 2 == 0;
}
