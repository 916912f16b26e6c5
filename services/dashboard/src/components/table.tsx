import type { ReactNode } from 'react';

/**
 * A bordered, horizontally scrollable table; `actions` adds a last column of row buttons (named for screen readers).
 */
export function Table({
  columns,
  actions,
  children,
}: {
  columns: readonly string[];
  actions?: boolean;
  children: ReactNode;
}) {
  return (
    <div className="table-wrap">
      <table className="table">
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
            {actions ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
