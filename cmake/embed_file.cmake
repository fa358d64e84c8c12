# cmake -DINPUT=file -DOUTPUT=file.cpp -DSYMBOL=name -P embed_file.cmake
# Writes a C++ source defining `unsigned char const SYMBOL[]` and `unsigned long const
# SYMBOL_size` with INPUT's bytes (the af_xdp backend's XDP object).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}"
     "// Generated from ${INPUT} by cmake/embed_file.cmake: do not edit.\n"
     "extern unsigned char const ${SYMBOL}[];\n"
     "extern unsigned long const ${SYMBOL}_size;\n"
     "alignas(8) unsigned char const ${SYMBOL}[] = {\n${bytes}\n};\n"
     "unsigned long const ${SYMBOL}_size = ${size};\n")
