// Click a header of a result table (class gpuperf-table) to sort by that column;
// click again to reverse. Cells sort by their data-sort key (numbers as numbers),
// cells without one ("-", "error") last.
document.querySelectorAll("table.gpuperf-table").forEach((table) => {
  const headers = table.querySelectorAll("thead th");
  headers.forEach((th, column) => {
    th.tabIndex = 0;
    const sort = () => {
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      headers.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const body = table.tBodies[0];
      const key = (row) => {
        const cell = row.cells[column];
        const raw = cell && cell.dataset.sort;
        if (raw === undefined) return null;
        const number = Number(raw);
        return Number.isNaN(number) ? raw : number;
      };
      const rows = Array.from(body.rows).map((row, index) => ({ row, index, key: key(row) }));
      rows.sort((a, b) => {
        if (a.key === null || b.key === null) {
          return a.key === b.key ? a.index - b.index : a.key === null ? 1 : -1;
        }
        const order = a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
        if (order === 0) return a.index - b.index;
        return ascending ? order : -order;
      });
      rows.forEach(({ row }) => body.appendChild(row));
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        sort();
      }
    });
  });
});
